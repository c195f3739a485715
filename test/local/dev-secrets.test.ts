import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readDevEnvFile, writeDevEnvFile } from "../../deploy/local/src/dev-env-file.ts";
import { devSecretNames, loadDevSecrets, saveDevEnv } from "../../deploy/local/src/dev-secrets.ts";

describe("dev secrets (.subdata/dev.env)", () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "subdata-dev-secrets-"));
    path = join(dir, "dev.env");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("generates every secret on the first run, strong enough for the services' checks", () => {
    const { secrets, created } = loadDevSecrets(path);
    expect(created.sort()).toEqual([...devSecretNames].sort());
    expect(secrets.SUBDATA_CLI_TOKEN.length).toBeGreaterThanOrEqual(32);
    expect(secrets.SUBDATA_PAGE_TOKEN_SECRET.length).toBeGreaterThanOrEqual(32);
    expect(Buffer.from(secrets.SUBDATA_WEBHOOK_SECRET_KEY, "base64")).toHaveLength(32);
    expect(new Set(Object.values(secrets)).size).toBe(devSecretNames.length);
  });

  it("reuses the saved secrets on later runs and generates nothing new", () => {
    const first = loadDevSecrets(path).secrets;
    saveDevEnv(path, first, { NATS_URL: "nats://127.0.0.1:4222" });
    const second = loadDevSecrets(path);
    expect(second.created).toEqual([]);
    expect(second.secrets).toEqual(first);
  });

  it("generates only what is missing from an older file", () => {
    writeDevEnvFile(path, { SUBDATA_CLI_TOKEN: "x".repeat(40) }, []);
    const { secrets, created } = loadDevSecrets(path);
    expect(secrets.SUBDATA_CLI_TOKEN).toBe("x".repeat(40));
    expect(created).not.toContain("SUBDATA_CLI_TOKEN");
    expect(created).toContain("SUBDATA_PAGE_TOKEN_SECRET");
  });

  it("writes the file readable by its owner only (mode 0600), with the stack's URLs for the CLI", () => {
    const { secrets } = loadDevSecrets(path);
    saveDevEnv(path, secrets, { DATABASE_URL: "postgres://postgres:pw@127.0.0.1:54329/subdata", SUBDATA_AUTH_URL: "http://127.0.0.1:8092" });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const values = readDevEnvFile(path);
    expect(values.SUBDATA_AUTH_URL).toBe("http://127.0.0.1:8092");
    expect(values.DATABASE_URL).toBe("postgres://postgres:pw@127.0.0.1:54329/subdata");
    expect(readFileSync(path, "utf8")).toMatch(/^# /);
  });

  it("reads dotenv quoting, export prefixes and comments", () => {
    const text = `# comment\nexport A="quoted value"\nB='single'\nC=plain=with=equals\n\n`;
    writeFileSync(path, text);
    expect(readDevEnvFile(path)).toEqual({ A: "quoted value", B: "single", C: "plain=with=equals" });
  });
});
