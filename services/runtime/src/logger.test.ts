import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "./logger.ts";

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, destination };
}

describe("createLogger", () => {
  it("never writes authorization headers, keys, secrets or tokens", () => {
    const { lines, destination } = capture();
    const logger = createLogger({ name: "test", destination });
    const apiKey = "sk_live_abcdefghijklmnopqrstuvwxyz012345";
    const secret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA==";
    logger.info({ authorization: `Bearer ${apiKey}` }, "top level");
    logger.info({ req: { headers: { authorization: `Bearer ${apiKey}` } } }, "request headers");
    logger.info({ headers: { authorization: `Bearer ${apiKey}` } }, "headers");
    logger.info({ key: apiKey, secret, token: "t0ken-t0ken-t0ken-t0ken-t0ken-t0ken" }, "fields");
    logger.info({ endpoint: { secret, key: apiKey } }, "nested");
    logger.info({ config: { serviceToken: "service-token-service-token-service", databaseUrl: "postgres://u:pw@h/db" } }, "config");
    const text = lines.join("");
    expect(lines).toHaveLength(6);
    for (const leaked of [apiKey, secret, "t0ken-t0ken", "service-token-service", "pw@h"]) expect(text).not.toContain(leaked);
    expect(text).toContain("[redacted]");
  });

  it("adds the context fields (the current trace) to every line", () => {
    const { lines, destination } = capture();
    const logger = createLogger({ name: "test", destination, context: () => ({ traceId: "t".repeat(32), requestId: "req_1" }) });
    logger.child({ component: "x" }).warn("hello");
    expect(JSON.parse(lines[0]!)).toMatchObject({ name: "test", level: "warn", traceId: "t".repeat(32), requestId: "req_1", component: "x" });
  });
});
