import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSafeHttpClient } from "../../services/webhook/src/delivery/safe-http-client.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** A self-signed certificate for `dnsName`, made with openssl. */
function selfSigned(dnsName: string): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), "whd-tls-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        `/CN=${dnsName}`,
        "-addext",
        `subjectAltName=DNS:${dnsName}`,
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    return { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("HTTPS targets", () => {
  const forLocalhost = selfSigned("localhost");
  const forOtherName = selfSigned("other.example");
  const servers: Server[] = [];
  const start = async (credentials: { key: string; cert: string }) => {
    const server = createServer(credentials, (_req, res) => res.writeHead(200).end("secure"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
    return (server.address() as AddressInfo).port;
  };
  let port = 0;
  let mismatchedPort = 0;

  beforeAll(async () => {
    port = await start(forLocalhost);
    mismatchedPort = await start(forOtherName);
  });
  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      server.close();
    }
  });

  const client = (ca?: string) => createSafeHttpClient({ allowPrivate: true, timeoutMs: 5_000, maxResponseBytes: 1024, ...(ca ? { ca } : {}) });

  it("connects to the resolved address but verifies the certificate against the host name", async () => {
    const http = client(forLocalhost.cert);
    const outcome = await http.post(`https://localhost:${port}/hook`, {}, "{}");
    await http.close();
    expect(outcome).toMatchObject({ kind: "response", status: 200 });
    if (outcome.kind === "response") expect(outcome.body.toString()).toBe("secure");
  });

  it("classifies an untrusted or mismatched certificate as TLS", async () => {
    const untrusted = client();
    expect(await untrusted.post(`https://localhost:${port}/hook`, {}, "{}")).toMatchObject({ kind: "error", errorClass: "TLS" });
    await untrusted.close();
    const mismatched = client(forOtherName.cert);
    expect(await mismatched.post(`https://localhost:${mismatchedPort}/hook`, {}, "{}")).toMatchObject({ kind: "error", errorClass: "TLS" });
    await mismatched.close();
  });
});
