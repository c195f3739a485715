import { Code, ConnectError } from "@connectrpc/connect";
import { createSafeHttpClient } from "../../services/webhook/src/delivery/safe-http-client.ts";
import { createUrlPolicy } from "@subdata/webhook";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultReceiver, type FaultReceiver } from "../faults/receiver.ts";

/**
 * OWASP API7 (SSRF) for webhook URLs: every disguise of a private, loopback, link-local, metadata or
 * otherwise non-public address is refused at registration, and the address actually connected to is
 * checked again at delivery, so a name that changes its answer (DNS rebinding) and a redirect do not
 * get through. The test-event and delivery paths use the same client.
 */

// Literal disguises: each must be refused even though it is spelled to look harmless.
const DISGUISED = [
  "https://127.0.0.1/",
  "https://127.1/",
  "https://127.0.1/",
  "https://0177.0.0.1/",
  "https://0x7f000001/",
  "https://0x7f.0x0.0x0.0x1/",
  "https://2130706433/",
  "https://017700000001/",
  "https://0/",
  "https://0.0.0.0/",
  "https://[::]/",
  "https://[::1]/",
  "https://[0:0:0:0:0:0:0:1]/",
  "https://[::ffff:127.0.0.1]/",
  "https://[::ffff:7f00:1]/",
  "https://[::ffff:a9fe:a9fe]/",
  "https://[64:ff9b::7f00:1]/",
  "https://[fe80::1]/",
  "https://[fc00::1]/",
  "https://[fd00:ec2::254]/",
  "https://169.254.169.254/latest/meta-data/",
  "https://169.254.170.2/",
  "https://100.100.100.200/",
  "https://10.0.0.1/",
  "https://10.255.255.255/",
  "https://172.16.0.1/",
  "https://172.31.255.254/",
  "https://192.168.1.1/",
  "https://100.64.0.1/",
  "https://198.18.0.1/",
  "https://192.0.0.1/",
  "https://224.0.0.1/",
  "https://255.255.255.255/",
  "https://localhost/",
  "https://LOCALHOST./",
  "https://sub.localhost/",
  "https://127.0.0.1:443@93.184.215.14/",
  "https://93.184.215.14#@127.0.0.1/",
];

// Names: what each "resolves" to in this test's resolver.
const NAMES: Record<string, string[]> = {
  "metadata.google.internal": ["169.254.169.254"],
  "rebind.example": ["93.184.215.14", "127.0.0.1"],
  "mapped.example": ["::ffff:10.0.0.1"],
  "public.example": ["93.184.215.14"],
};

describe("SSRF: registration", () => {
  const policy = createUrlPolicy({
    allowPrivate: false,
    resolveHost: async (hostname) => NAMES[hostname] ?? [],
  });

  async function refusal(url: string): Promise<ConnectError | undefined> {
    try {
      await policy.check(url, "url");
      return undefined;
    } catch (error) {
      return ConnectError.from(error);
    }
  }

  it.each(DISGUISED)("refuses %s", async (url) => {
    const error = await refusal(url);
    expect(error, url).toBeDefined();
    expect(error!.code).toBe(Code.InvalidArgument);
  });

  it.each(["https://metadata.google.internal/", "https://rebind.example/", "https://mapped.example/"])(
    "refuses %s, a name with a private answer",
    async (url) => {
      expect((await refusal(url))?.code).toBe(Code.InvalidArgument);
    },
  );

  it("accepts a public name", async () => {
    expect(await refusal("https://public.example/hook")).toBeUndefined();
  });
});

describe("SSRF: delivery re-checks the address it connects to", () => {
  let receiver: FaultReceiver;

  beforeAll(async () => {
    receiver = await startFaultReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });

  it("a name that answered public at registration and now answers loopback (rebinding) is blocked", async () => {
    let answers = [{ address: "93.184.215.14", family: 4 }];
    const client = createSafeHttpClient({ allowPrivate: false, timeoutMs: 2_000, maxResponseBytes: 1024, resolve: async () => answers });
    answers = [{ address: "127.0.0.1", family: 4 }];
    const outcome = await client.post(`http://rebind.example:${receiver.port}/hook`, {}, "{}");
    expect(outcome).toMatchObject({ kind: "error", errorClass: "BLOCKED_ADDRESS" });
    expect(receiver.receipts).toHaveLength(0);
    await client.close();
  });

  it("a redirect to a private address is not followed", async () => {
    // The receiver stands in for a public host (allowPrivate only so the test can reach it at all).
    receiver.setBehaviour(() => ({ status: 302, headers: { location: "http://169.254.169.254/latest/meta-data/" } }));
    const client = createSafeHttpClient({ allowPrivate: true, timeoutMs: 2_000, maxResponseBytes: 1024 });
    const outcome = await client.post(`${receiver.url}`, {}, "{}");
    expect(outcome).toMatchObject({ kind: "response", status: 302 });
    expect(receiver.receipts).toHaveLength(1);
    await client.close();
  });
});
