import { describe, expect, it } from "vitest";
import type { KeyObject } from "node:crypto";
import { createOpenedSecrets } from "./opened-secrets.ts";
import { secretKeyBytes } from "./sign-webhook.ts";
import { createSecretBox, generateSigningSecret, type SecretBox } from "../secret-box.ts";

function countingBox(): { box: SecretBox; opens: () => number } {
  const real = createSecretBox(Buffer.alloc(32, 7).toString("base64"));
  let opens = 0;
  return {
    box: {
      seal: real.seal,
      open(sealed, associatedData) {
        opens += 1;
        return real.open(sealed, associatedData);
      },
    },
    opens: () => opens,
  };
}

/** The secret bytes each key signs with, to compare with the secrets that were sealed. */
const bytesOf = (keys: readonly KeyObject[]) => keys.map((key) => key.export());
const bytes = (...secrets: string[]) => secrets.map(secretKeyBytes);

describe("createOpenedSecrets", () => {
  it("opens an endpoint's secret once while its sealed bytes stay the same", () => {
    const { box, opens } = countingBox();
    const secret = generateSigningSecret();
    const sealed = box.seal(secret, "we_1");
    const secrets = createOpenedSecrets(box);
    const keys = secrets.open("we_1", sealed, null);
    expect(bytesOf(keys)).toEqual(bytes(secret));
    expect(secrets.open("we_1", Buffer.from(sealed), null)).toBe(keys);
    expect(opens()).toBe(1);
  });

  it("opens afresh after a rotation, and when the previous secret stops being returned", () => {
    const { box, opens } = countingBox();
    const old = generateSigningSecret();
    const rotated = generateSigningSecret();
    const secrets = createOpenedSecrets(box);
    expect(bytesOf(secrets.open("we_1", box.seal(old, "we_1"), null))).toEqual(bytes(old));
    const sealedRotated = box.seal(rotated, "we_1");
    const sealedOld = box.seal(old, "we_1");
    expect(bytesOf(secrets.open("we_1", sealedRotated, sealedOld))).toEqual(bytes(rotated, old));
    expect(bytesOf(secrets.open("we_1", sealedRotated, null))).toEqual(bytes(rotated));
    expect(opens()).toBe(4);
  });

  it("never hands one endpoint's secret to another", () => {
    const { box } = countingBox();
    const secret = generateSigningSecret();
    const sealed = box.seal(secret, "we_1");
    const secrets = createOpenedSecrets(box);
    expect(bytesOf(secrets.open("we_1", sealed, null))).toEqual(bytes(secret));
    // Sealed for we_1: the endpoint id is the authenticated data, so it does not open for we_2.
    expect(() => secrets.open("we_2", sealed, null)).toThrow();
  });
});
