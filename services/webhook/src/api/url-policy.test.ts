import { ConnectError } from "@connectrpc/connect";
import { errorDetailOf, ErrorReason } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { createUrlPolicy, type ResolveHost } from "./url-policy.ts";

const hosts: Record<string, string[]> = {
  "hooks.example.com": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
  "rebind.example.com": ["93.184.215.14", "10.0.0.7"],
  localhost: ["127.0.0.1", "::1"],
};
const resolveHost: ResolveHost = async (host) => {
  const addresses = hosts[host];
  if (!addresses) throw new Error("ENOTFOUND");
  return addresses;
};

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ConnectError);
  const detail = errorDetailOf(error as ConnectError);
  expect(detail?.reason).toBe(ErrorReason.URL_REFUSED);
  expect(detail?.fieldViolations[0]?.field).toBe("url");
  return (error as ConnectError).rawMessage;
}

describe("url policy with private targets refused", () => {
  const policy = createUrlPolicy({ allowPrivate: false, resolveHost });

  it("accepts https URLs whose every address is public", async () => {
    await expect(policy.check("https://hooks.example.com/subdata?x=1", "url")).resolves.toBe("https://hooks.example.com/subdata?x=1");
    await expect(policy.check("https://93.184.215.14:8443/h", "url")).resolves.toBe("https://93.184.215.14:8443/h");
  });

  it.each([
    "http://hooks.example.com/",
    "https://127.0.0.1/",
    "https://localhost/",
    "https://10.0.0.1/",
    "https://172.16.0.1/",
    "https://192.168.0.1/",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/",
    "https://[fc00::1]/",
    "https://[::ffff:127.0.0.1]/",
    "https://[::127.0.0.1]/",
    "https://[::ffff:7f00:1]/",
    "https://[0:0:0:0:0:ffff:127.0.0.1]/",
    "https://[0:0:0:0:0:0:0:1]/",
    "https://[::ffff:169.254.169.254]/",
    "https://[::]/",
    "https://[fe80::]/",
    "https://[fe80::1%25eth0]/",
    "https://[fc00::]/",
    "https://[fd00:ec2::254]/",
    "https://[64:ff9b::]/",
    "https://[64:ff9b::a9fe:a9fe]/",
    "https://[2002:7f00:1::]/",
    "https://[2001::1]/",
    "https://2130706433/",
    "https://0177.0.0.1/",
    "https://0x7f.0.0.1/",
    "https://0/",
    "https://rebind.example.com/",
    "https://unknown.invalid/",
    "ftp://hooks.example.com/",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "https://user:pass@hooks.example.com/",
    "https://user@hooks.example.com/",
    "https://hooks.example.com/#fragment",
    "/relative/path",
    "",
    `https://hooks.example.com/${"a".repeat(2048)}`,
  ])("refuses %s", async (url) => {
    await refusal(policy.check(url, "url"));
  });

  it("names the range of a refused address", async () => {
    expect(await refusal(policy.check("https://169.254.169.254/", "url"))).toContain("linkLocal");
  });
});

describe("url policy with private targets allowed", () => {
  const policy = createUrlPolicy({
    allowPrivate: true,
    resolveHost: () => {
      throw new Error("must not resolve when private targets are allowed");
    },
  });

  it.each(["http://127.0.0.1:4000/hook", "http://localhost/", "https://10.0.0.1/", "http://[::1]/", "http://2130706433/"])("accepts %s", async (url) => {
    await expect(policy.check(url, "url")).resolves.toMatch(/^https?:\/\//);
  });

  it("still refuses other schemes and credentials", async () => {
    await refusal(policy.check("ftp://127.0.0.1/", "url"));
    await refusal(policy.check("http://a:b@127.0.0.1/", "url"));
  });
});
