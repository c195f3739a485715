import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { errorDetailOf, ErrorReason } from "./errors.ts";
import { createPageTokenCodec, type PageTokenBinding } from "./page-token.ts";

const codec = createPageTokenCodec("x".repeat(32));
const binding: PageTokenBinding = { method: "svc/List", merchantId: "mer_a", filter: { status: "ACTIVE" } };
const position = ["2026-11-22 00:11:51.123456+00", "sub_1"];

function expectInvalid(run: () => unknown) {
  try {
    run();
    expect.fail("expected the token to be refused");
  } catch (error) {
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect(errorDetailOf(error as ConnectError)?.reason).toBe(ErrorReason.INVALID_PAGE_TOKEN);
  }
}

describe("page tokens", () => {
  it("round-trips the exact keyset position", () => {
    expect(codec.decode(codec.encode(binding, position), binding)).toEqual(position);
  });

  it("refuses a token used with another filter, merchant or method", () => {
    const token = codec.encode(binding, position);
    expectInvalid(() => codec.decode(token, { ...binding, filter: { status: "PAUSED" } }));
    expectInvalid(() => codec.decode(token, { ...binding, merchantId: "mer_b" }));
    expectInvalid(() => codec.decode(token, { ...binding, method: "svc/Other" }));
  });

  it("refuses a tampered token", () => {
    const token = codec.encode(binding, position);
    const forged = Buffer.from(JSON.stringify(["1970-01-01 00:00:00+00", "sub_0"])).toString("base64url");
    expectInvalid(() => codec.decode(`${forged}${token.slice(token.indexOf("."))}`, binding));
    expectInvalid(() => codec.decode(`${token}x`, binding));
    expectInvalid(() => codec.decode("garbage", binding));
    expectInvalid(() => codec.decode("", binding));
  });

  it("refuses a signature spelled differently that decodes to the same bytes (spare bits of the last character)", () => {
    const token = codec.encode(binding, position);
    const last = token.at(-1)!;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    // A 32-byte MAC is 43 characters: the last one carries 4 data bits and 2 spare ones.
    const sibling = alphabet[alphabet.indexOf(last) ^ 1]!;
    const forged = `${token.slice(0, -1)}${sibling}`;
    expect(Buffer.from(forged.slice(forged.indexOf(".") + 1), "base64url")).toEqual(Buffer.from(token.slice(token.indexOf(".") + 1), "base64url"));
    expectInvalid(() => codec.decode(forged, binding));
  });

  it("refuses a token signed with another secret", () => {
    const other = createPageTokenCodec("y".repeat(32));
    expectInvalid(() => codec.decode(other.encode(binding, position), binding));
  });
});

describe("page tokens during a secret rotation", () => {
  const OLD = "o".repeat(32);
  const NEW = "n".repeat(32);
  const before = createPageTokenCodec(OLD);
  // Phase 1: still signing with OLD, already honouring NEW; phase 2: signing with NEW, still honouring OLD.
  const phase1 = createPageTokenCodec(OLD, [NEW]);
  const phase2 = createPageTokenCodec(NEW, [OLD]);
  const after = createPageTokenCodec(NEW);

  it("honours tokens signed with the main secret or an accepted one, so a walk can move between replicas", () => {
    const fromOld = before.encode(binding, position);
    expect(phase2.decode(fromOld, binding)).toEqual(position);
    expect(phase1.decode(phase2.encode(binding, position), binding)).toEqual(position);
    expect(phase2.decode(phase1.encode(binding, position), binding)).toEqual(position);
  });

  it("signs only with the main secret", () => {
    const signed = phase2.encode(binding, position);
    expect(after.decode(signed, binding)).toEqual(position);
    expectInvalid(() => before.decode(signed, binding));
  });

  it("refuses a token signed with a secret that is neither main nor accepted, and keeps every other check", () => {
    const stranger = createPageTokenCodec("s".repeat(32));
    expectInvalid(() => phase2.decode(stranger.encode(binding, position), binding));
    expectInvalid(() => phase2.decode(before.encode(binding, position), { ...binding, merchantId: "mer_b" }));
    // Once OLD is dropped, its tokens are refused.
    expectInvalid(() => after.decode(before.encode(binding, position), binding));
  });
});
