import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { loadLocalConfig } from "../../deploy/local/src/config.ts";
import type { DevSecrets } from "../../deploy/local/src/dev-secrets.ts";
import type { ManagedProcess } from "../../deploy/local/src/managed-process.ts";
import { MALLOC_TUNABLES } from "../../deploy/local/src/node-flags.ts";
import { buildProcessTable, childEnvironment } from "../../deploy/local/src/process-table.ts";
import { renderSummary } from "../../deploy/local/src/summary.ts";

const secrets: DevSecrets = {
  SUBDATA_GATEWAY_TOKEN: "gateway-token-0123456789abcdef0123456789",
  SUBDATA_CONSOLE_TOKEN: "console-token-0123456789abcdef0123456789",
  SUBDATA_APP_TOKEN: "app-token-0123456789abcdef0123456789abcd",
  SUBDATA_CLI_TOKEN: "cli-token-0123456789abcdef0123456789abcd",
  SUBDATA_PAGE_TOKEN_SECRET: "page-token-secret-0123456789abcdef0123",
  SUBDATA_WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString("base64"),
  SUBDATA_POSTGRES_PASSWORD: "adminpw00000000000000000000000000000",
  SUBDATA_QUERY_DB_PASSWORD: "querypw0000000000000000000000000000",
  SUBDATA_AUTH_DB_PASSWORD: "authpw00000000000000000000000000000",
  SUBDATA_WEBHOOK_DB_PASSWORD: "webhookpw000000000000000000000000000",
  SUBDATA_MAINTAIN_DB_PASSWORD: "maintainpw00000000000000000000000000",
  SUBDATA_CONSOLE_DB_PASSWORD: "consolepw000000000000000000000000000",
  SUBDATA_NATS_RELAY_PASSWORD: "natsrelaypw0000000000000000000000000",
  SUBDATA_NATS_WEBHOOK_PASSWORD: "natswebhookpw00000000000000000000000",
  SUBDATA_NATS_AUTH_PASSWORD: "natsauthpw00000000000000000000000000",
  SUBDATA_NATS_GATEWAY_PASSWORD: "natsgatewaypw00000000000000000000000",
};
const sha256Hex = (token: string) => createHash("sha256").update(token).digest("hex");
const adminUrl = `postgres://postgres:${secrets.SUBDATA_POSTGRES_PASSWORD}@127.0.0.1:54329/subdata`;
const roleUrls = {
  query: `postgres://subdata_query:${secrets.SUBDATA_QUERY_DB_PASSWORD}@127.0.0.1:54329/subdata`,
  auth: `postgres://subdata_auth:${secrets.SUBDATA_AUTH_DB_PASSWORD}@127.0.0.1:54329/subdata`,
  webhook: `postgres://subdata_webhook:${secrets.SUBDATA_WEBHOOK_DB_PASSWORD}@127.0.0.1:54329/subdata`,
  maintain: `postgres://subdata_maintain:${secrets.SUBDATA_MAINTAIN_DB_PASSWORD}@127.0.0.1:54329/subdata`,
  console: `postgres://subdata_console:${secrets.SUBDATA_CONSOLE_DB_PASSWORD}@127.0.0.1:54329/subdata`,
};
const config = loadLocalConfig({}, "/repo");
const table = buildProcessTable({ config, secrets, roleUrls, natsUrl: "nats://127.0.0.1:4222" });
const byName = (name: string) => {
  const spec = table.find((entry) => entry.name === name);
  if (!spec) throw new Error(`no ${name} in the table`);
  return spec;
};

describe("the process table", () => {
  it("lists every process with its entry file and default port", () => {
    expect(table.map(({ name, entry, port }) => ({ name, entry, port }))).toEqual([
      { name: "query", entry: "services/query/src/main.ts", port: 8091 },
      { name: "auth", entry: "services/auth/src/main.ts", port: 8092 },
      { name: "webhook", entry: "services/webhook/src/main.ts", port: 8093 },
      { name: "relay", entry: "services/relay/src/main.ts", port: 8094 },
      { name: "gateway", entry: "gateway/src/main.ts", port: 8080 },
      { name: "console", entry: "services/console/src/main.ts", port: 8095 },
      { name: "maintain", entry: "services/cli/src/main.ts", port: undefined },
    ]);
  });

  it("runs the maintenance task hourly as the subdata_maintain role, with its metrics port and no service secret", () => {
    const maintain = byName("maintain");
    expect(maintain.args).toEqual(["maintain", "--every", "1h", "--metrics-port", "9095"]);
    expect(maintain.env).toEqual({ HOST: "127.0.0.1", LOG_LEVEL: "info", DATABASE_URL: roleUrls.maintain });
    expect(maintain.readiness).toEqual({ kind: "none" });
  });

  it("runs the console with its own role, its page on 8081 under a plain-http public URL (no Secure cookie locally)", () => {
    const console = byName("console");
    expect(console.env.DATABASE_URL).toBe(roleUrls.console);
    expect(console.env.SUBDATA_CONSOLE_WEB_PORT).toBe("8081");
    expect(console.env.SUBDATA_CONSOLE_PUBLIC_URL).toBe("http://127.0.0.1:8081/console");
  });

  it("gives each service its own role's connection and the gateway none", () => {
    expect(byName("query").env.DATABASE_URL).toBe(roleUrls.query);
    expect(byName("auth").env.DATABASE_URL).toBe(roleUrls.auth);
    expect(byName("webhook").env.DATABASE_URL).toBe(roleUrls.webhook);
    expect(byName("relay").env.DATABASE_URL).toBe(roleUrls.webhook);
    expect(byName("gateway").env.DATABASE_URL).toBeUndefined();
    expect(byName("maintain").env.DATABASE_URL).toBe(roleUrls.maintain);
    for (const spec of table) expect(Object.values(spec.env)).not.toContain(adminUrl);
  });

  it("logs each NATS client in as its own user, and gives the processes without NATS no NATS login", () => {
    expect(byName("relay").env).toMatchObject({ NATS_USER: "subdata-relay", NATS_PASSWORD: secrets.SUBDATA_NATS_RELAY_PASSWORD });
    expect(byName("webhook").env).toMatchObject({ NATS_USER: "subdata-webhook", NATS_PASSWORD: secrets.SUBDATA_NATS_WEBHOOK_PASSWORD });
    expect(byName("auth").env).toMatchObject({ NATS_USER: "subdata-auth", NATS_PASSWORD: secrets.SUBDATA_NATS_AUTH_PASSWORD });
    expect(byName("gateway").env).toMatchObject({ NATS_USER: "subdata-gateway", NATS_PASSWORD: secrets.SUBDATA_NATS_GATEWAY_PASSWORD });
    expect(byName("query").env.NATS_USER).toBeUndefined();
    expect(byName("maintain").env.NATS_USER).toBeUndefined();
  });

  it("gives every child the image's malloc settings unless the caller sets GLIBC_TUNABLES itself", () => {
    for (const spec of table) expect(childEnvironment({ PATH: "/usr/bin" }, spec).GLIBC_TUNABLES).toBe(MALLOC_TUNABLES);
    expect(childEnvironment({ GLIBC_TUNABLES: "" }, byName("gateway")).GLIBC_TUNABLES).toBe("");
    expect(childEnvironment({ GLIBC_TUNABLES: "glibc.malloc.arena_max=4" }, byName("query")).GLIBC_TUNABLES).toBe("glibc.malloc.arena_max=4");
  });

  it("never hands the launcher's own admin DATABASE_URL down to a child", () => {
    const env = childEnvironment({ DATABASE_URL: adminUrl, PATH: "/usr/bin", PORT: "1" }, byName("gateway"));
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.PATH).toBe("/usr/bin");
    expect(env.PORT).toBe("8080");
  });

  it("sets the shared settings on every service and the webhook key only where it is used", () => {
    for (const spec of table.filter((entry) => entry.name !== "maintain")) {
      expect(spec.env).toMatchObject({
        HOST: "127.0.0.1",
        LOG_LEVEL: "info",
        SUBDATA_GATEWAY_TOKEN_SHA256: sha256Hex(secrets.SUBDATA_GATEWAY_TOKEN),
        SUBDATA_CONSOLE_TOKEN_SHA256: sha256Hex(secrets.SUBDATA_CONSOLE_TOKEN),
        SUBDATA_APP_TOKEN_SHA256: sha256Hex(secrets.SUBDATA_APP_TOKEN),
        SUBDATA_CLI_TOKEN_SHA256: sha256Hex(secrets.SUBDATA_CLI_TOKEN),
        SUBDATA_PAGE_TOKEN_SECRET: secrets.SUBDATA_PAGE_TOKEN_SECRET,
        NATS_URL: "nats://127.0.0.1:4222",
        SUBDATA_QUERY_URL: "http://127.0.0.1:8091",
        SUBDATA_AUTH_URL: "http://127.0.0.1:8092",
      });
      const usesWebhookKey = spec.name === "webhook" || spec.name === "relay";
      expect(spec.env.SUBDATA_WEBHOOK_SECRET_KEY).toBe(usesWebhookKey ? secrets.SUBDATA_WEBHOOK_SECRET_KEY : undefined);
      expect(spec.env.SUBDATA_WEBHOOK_ALLOW_PRIVATE).toBe(usesWebhookKey ? "true" : undefined);
    }
    expect(byName("query").env.PORT).toBe("8091");
  });

  it("gives each caller its own token and every other process none (servers hold only the hashes)", () => {
    const tokens = [secrets.SUBDATA_GATEWAY_TOKEN, secrets.SUBDATA_CONSOLE_TOKEN, secrets.SUBDATA_APP_TOKEN, secrets.SUBDATA_CLI_TOKEN];
    const held = Object.fromEntries(table.map((spec) => [spec.name, tokens.filter((token) => Object.values(spec.env).includes(token))]));
    expect(held).toEqual({
      query: [],
      auth: [],
      webhook: [],
      relay: [],
      gateway: [secrets.SUBDATA_GATEWAY_TOKEN],
      console: [secrets.SUBDATA_CONSOLE_TOKEN],
      maintain: [],
    });
    expect(byName("relay").env.PORT).toBeUndefined();
    expect(byName("relay").env.SUBDATA_RELAY_HEALTH_PORT).toBe("8094");
  });

  it("takes every port from the environment", () => {
    const custom = loadLocalConfig(
      { QUERY_PORT: "9001", AUTH_PORT: "9002", WEBHOOK_PORT: "9003", RELAY_HEALTH_PORT: "9004", GATEWAY_PORT: "9000", CONSOLE_PORT: "9005" },
      "/repo",
    );
    const ports = buildProcessTable({ config: custom, secrets, roleUrls, natsUrl: "nats://x:4222" }).map((spec) => spec.port);
    expect(ports).toEqual([9001, 9002, 9003, 9004, 9000, 9005, undefined]);
  });
});

describe("the summary", () => {
  it("says where everything listens and prints no secret", () => {
    const fakeProcess = { running: true } as ManagedProcess;
    const lines = renderSummary({
      repoRoot: "/repo",
      dataDir: "/repo/.subdata",
      devEnvPath: "/repo/.subdata/dev.env",
      databaseUrl: adminUrl,
      embeddedPostgres: { clusterDir: "/repo/.subdata/postgres" },
      nats: { kind: "external", url: "nats://127.0.0.1:4222" },
      running: table.filter((spec) => spec.name !== "gateway").map((spec) => ({ spec, process: fakeProcess })),
      skipped: [{ spec: byName("gateway"), reason: "not built yet (gateway/src/main.ts does not exist)" }],
    });
    const text = lines.join("\n");
    expect(lines[0]).toBe("subdata is ready");
    expect(text).toContain("http://127.0.0.1:8091");
    expect(text).toContain("postgres://postgres@127.0.0.1:54329/subdata");
    expect(text).toContain("gateway   skipped: not built yet");
    expect(text).toContain("maintain  hourly: audit partitions, retention");
    expect(text).toContain(".subdata/dev.env");
    expect(text).toContain("(embedded, data in .subdata/postgres)");
    for (const secret of Object.values(secrets)) expect(text).not.toContain(secret);
  });

  it("says where the cluster lives when it is outside the data dir (as root), and names a NATS without JetStream", () => {
    const lines = renderSummary({
      repoRoot: "/repo",
      dataDir: "/repo/.subdata",
      devEnvPath: "/repo/.subdata/dev.env",
      databaseUrl: adminUrl,
      embeddedPostgres: { clusterDir: "/var/lib/subdata/postgres/repo-1a2b3c4d/data" },
      nats: { kind: "no-jetstream", url: "nats://127.0.0.1:4222", reason: "no JetStream" },
      running: [],
      skipped: [],
    });
    expect(lines).toContain(
      "  postgres  postgres://postgres@127.0.0.1:54329/subdata  (embedded, data in /var/lib/subdata/postgres/repo-1a2b3c4d/data, linked from .subdata/postgres)",
    );
    expect(lines).toContain("  nats      nats://127.0.0.1:4222  answers without JetStream: events and webhooks are off");
  });
});
