import { describe, expect, it } from "vitest";
import { createOpenedSecrets } from "./opened-secrets.ts";
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

describe("createOpenedSecrets", () => {
  it("opens an endpoint's secret once while its sealed bytes stay the same", () => {
    const { box, opens } = countingBox();
    const secret = generateSigningSecret();
    const sealed = box.seal(secret, "we_1");
    const secrets = createOpenedSecrets(box);
    expect(secrets.open("we_1", sealed, null)).toEqual([secret]);
    expect(secrets.open("we_1", Buffer.from(sealed), null)).toEqual([secret]);
    expect(opens()).toBe(1);
  });

  it("opens afresh after a rotation, and when the previous secret stops being returned", () => {
    const { box, opens } = countingBox();
    const old = generateSigningSecret();
    const rotated = generateSigningSecret();
    const secrets = createOpenedSecrets(box);
    expect(secrets.open("we_1", box.seal(old, "we_1"), null)).toEqual([old]);
    const sealedRotated = box.seal(rotated, "we_1");
    const sealedOld = box.seal(old, "we_1");
    expect(secrets.open("we_1", sealedRotated, sealedOld)).toEqual([rotated, old]);
    expect(secrets.open("we_1", sealedRotated, null)).toEqual([rotated]);
    expect(opens()).toBe(4);
  });

  it("never hands one endpoint's secret to another", () => {
    const { box } = countingBox();
    const secret = generateSigningSecret();
    const sealed = box.seal(secret, "we_1");
    const secrets = createOpenedSecrets(box);
    expect(secrets.open("we_1", sealed, null)).toEqual([secret]);
    // Sealed for we_1: the endpoint id is the authenticated data, so it does not open for we_2.
    expect(() => secrets.open("we_2", sealed, null)).toThrow();
  });
});
