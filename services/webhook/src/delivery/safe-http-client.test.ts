import { afterEach, describe, expect, it } from "vitest";
import { classifyError, createSafeHttpClient, type SafeHttpClient } from "./safe-http-client.ts";

describe("createSafeHttpClient", () => {
  let client: SafeHttpClient | undefined;
  afterEach(async () => {
    await client?.close();
    client = undefined;
  });

  const withResolver = (addresses: string[]) => {
    const asked: string[] = [];
    client = createSafeHttpClient({
      allowPrivate: false,
      timeoutMs: 2_000,
      maxResponseBytes: 1024,
      resolve: async (hostname) => {
        asked.push(hostname);
        return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
      },
    });
    return { client, asked };
  };

  it.each([
    ["cloud metadata", ["169.254.169.254"]],
    ["RFC 1918", ["10.1.2.3"]],
    ["IPv6 unique-local", ["fd00:ec2::254"]],
    ["only non-public addresses", ["127.0.0.1", "192.168.1.1"]],
  ])("refuses a name resolving to %s, at connect time", async (_what, addresses) => {
    const { client, asked } = withResolver(addresses);
    const outcome = await client.post("https://hooks.example.com/in", {}, "{}");
    expect(outcome).toMatchObject({ kind: "error", errorClass: "BLOCKED_ADDRESS" });
    expect(asked).toEqual(["hooks.example.com"]);
  });

  it("checks IP literals without resolving them", async () => {
    const { client, asked } = withResolver([]);
    expect(await client.post("http://169.254.169.254/latest/meta-data", {}, "{}")).toMatchObject({ errorClass: "BLOCKED_ADDRESS" });
    expect(await client.post("http://[::ffff:10.0.0.1]/", {}, "{}")).toMatchObject({ errorClass: "BLOCKED_ADDRESS" });
    expect(asked).toEqual([]);
  });

  it("treats an empty answer as DNS and a non-HTTP URL as a connection failure", async () => {
    const { client } = withResolver([]);
    expect(await client.post("https://empty.example.com/", {}, "{}")).toMatchObject({ errorClass: "DNS" });
    expect(await client.post("ftp://example.com/", {}, "{}")).toMatchObject({ errorClass: "CONNECTION" });
  });
});

describe("classifyError", () => {
  const withCode = (code: string, cause?: Error) => Object.assign(new Error(code, cause ? { cause } : {}), { code });

  it.each([
    ["ENOTFOUND", "DNS"],
    ["EAI_AGAIN", "DNS"],
    ["UND_ERR_CONNECT_TIMEOUT", "TIMEOUT"],
    ["UND_ERR_HEADERS_TIMEOUT", "TIMEOUT"],
    ["ECONNREFUSED", "CONNECTION"],
    ["ECONNRESET", "CONNECTION"],
    ["UND_ERR_SOCKET", "CONNECTION"],
    ["DEPTH_ZERO_SELF_SIGNED_CERT", "TLS"],
    ["ERR_TLS_CERT_ALTNAME_INVALID", "TLS"],
    ["CERT_HAS_EXPIRED", "TLS"],
    ["UNABLE_TO_VERIFY_LEAF_SIGNATURE", "TLS"],
  ])("%s → %s", (code, errorClass) => {
    expect(classifyError(withCode(code))).toBe(errorClass);
  });

  it("looks through causes", () => {
    expect(classifyError(new Error("fetch failed", { cause: withCode("ENOTFOUND") }))).toBe("DNS");
  });
});
