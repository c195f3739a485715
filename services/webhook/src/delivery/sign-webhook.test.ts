import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { secretKeyBytes, signatureHeader, signingKey, signWebhook } from "./sign-webhook.ts";

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const previous = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
const id = "evt_2a1b3c";
const timestamp = 1_700_000_000;
const body = '{"id":"evt_2a1b3c","type":"subscription.updated"}';

describe("signWebhook", () => {
  it("matches the standardwebhooks library's own signature", () => {
    const expected = new Webhook(secret).sign(id, new Date(timestamp * 1000), body);
    expect(signWebhook(signingKey(secret), id, timestamp, body)).toBe(expected);
  });

  it("is base64 HMAC-SHA256 of id.timestamp.body keyed with the decoded secret", () => {
    const key = Buffer.from(secret.slice("whsec_".length), "base64");
    const mac = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
    expect(signWebhook(signingKey(secret), id, timestamp, body)).toBe(`v1,${mac}`);
  });

  it("keys with the bytes after whsec_, not the text", () => {
    expect(secretKeyBytes(secret)).toEqual(Buffer.from("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "base64"));
    expect(signingKey(secret).export()).toEqual(secretKeyBytes(secret));
  });
});

describe("signatureHeader", () => {
  it("during a rotation, carries one entry per secret, newest first, each verifiable on its own", () => {
    const header = signatureHeader([signingKey(secret), signingKey(previous)], id, timestamp, body);
    const entries = header.split(" ");
    expect(entries).toEqual([signWebhook(signingKey(secret), id, timestamp, body), signWebhook(signingKey(previous), id, timestamp, body)]);
    const headers = { "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": header };
    // The library checks the timestamp against the clock, so verify at the signing time.
    const now = Date.now;
    Date.now = () => timestamp * 1000;
    try {
      expect(new Webhook(secret).verify(body, headers)).toBeTruthy();
      expect(new Webhook(previous).verify(body, headers)).toBeTruthy();
      expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
    } finally {
      Date.now = now;
    }
  });

  it("refuses to sign with no secret", () => {
    expect(() => signatureHeader([], id, timestamp, body)).toThrow();
  });
});
