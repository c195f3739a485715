import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { parseEnv } from "node:util";
import { describe, expect, it } from "vitest";
import { ConfigError, env, loadConfig } from "./config.ts";

const secretA = randomBytes(24).toString("base64url");
const secretB = randomBytes(30).toString("base64");
const shape = { PORT: env.port(8080), SUBDATA_PAGE_TOKEN_SECRET: env.secret(), DATABASE_URL: env.databaseUrl() };

describe("loadConfig", () => {
  it("names every bad variable, without its value", () => {
    try {
      loadConfig(shape, { PORT: "http", SUBDATA_PAGE_TOKEN_SECRET: "hunter2" });
      expect.fail("expected a ConfigError");
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const message = (error as ConfigError).message;
      expect(message).toContain("PORT is invalid");
      expect(message).toContain("SUBDATA_PAGE_TOKEN_SECRET is invalid: must be at least 32 characters");
      expect(message).toContain("DATABASE_URL is not set");
      expect(message).not.toContain("hunter2");
    }
  });

  it("returns typed, frozen values with defaults", () => {
    const config = loadConfig(shape, { SUBDATA_PAGE_TOKEN_SECRET: secretA, DATABASE_URL: "postgres://localhost/db" });
    expect(config.PORT).toBe(8080);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("makes a service exit 1 with the list of problems and no stack trace", () => {
    const script = `import { loadConfigOrExit, loadConfig, env } from "./services/runtime/src/config.ts";
      loadConfigOrExit("subdata-test", () => loadConfig({ SUBDATA_PAGE_TOKEN_SECRET: env.secret() }, {}));`;
    let stderr = "";
    let status: number | null = 0;
    try {
      execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: "pipe" });
    } catch (error) {
      const failure = error as { status: number | null; stderr: Buffer };
      status = failure.status;
      stderr = failure.stderr.toString();
    }
    expect(status).toBe(1);
    expect(stderr).toContain("subdata-test: invalid configuration");
    expect(stderr).toContain("SUBDATA_PAGE_TOKEN_SECRET is not set");
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});

describe("env.secretList (secrets accepted during a rotation)", () => {
  const listShape = { SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: env.secretList() };
  const problemsOf = (value: string): string => {
    try {
      loadConfig(listShape, { SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: value });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).message;
    }
    throw new Error("expected a ConfigError");
  };

  it("is the empty list when unset or empty", () => {
    expect(loadConfig(listShape, {}).SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED).toEqual([]);
    expect(loadConfig(listShape, { SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: "" }).SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED).toEqual([]);
  });

  it("splits on commas, keeping each value exactly", () => {
    const first = secretA;
    const second = `${secretB}+/=`;
    expect(loadConfig(listShape, { SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: `${first},${second}` }).SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED).toEqual([first, second]);
  });

  it("refuses a short item, naming the variable and the item's position but never a value", () => {
    const message = problemsOf(`${secretA},hunter2`);
    expect(message).toContain("SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED is invalid: item 2 of 2 must be at least 32 characters");
    expect(message).not.toContain("hunter2");
    expect(message).not.toContain(secretA);
  });

  it("refuses empty items and a trailing comma", () => {
    const long = secretA;
    expect(problemsOf(`${long},,${long}`)).toContain("SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED is invalid: item 2 of 3 is empty");
    expect(problemsOf(`${long},`)).toContain("item 2 of 2 is empty");
    expect(problemsOf(",")).toContain("item 1 of 2 is empty");
  });

  it("refuses an item with surrounding whitespace rather than trimming it into another secret", () => {
    const long = secretA;
    expect(problemsOf(`${long}, ${long}`)).toContain("item 2 of 2 begins or ends with whitespace");
    expect(problemsOf(`${long}\n`)).toContain("item 1 of 1 begins or ends with whitespace");
  });
});

describe("placeholder secrets", () => {
  const secretShape = { SUBDATA_PAGE_TOKEN_SECRET: env.secret(), DATABASE_URL: env.databaseUrl() };
  const problemsOf = (variables: Record<string, string>): string => {
    try {
      loadConfig(secretShape, { SUBDATA_PAGE_TOKEN_SECRET: secretA, DATABASE_URL: "postgres://localhost/db", ...variables });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).message;
    }
    throw new Error("expected a ConfigError");
  };
  // deploy/.env.example is what a compose user copies; every value in it must stop a service.
  const example = parseEnv(readFileSync(new URL("../../../deploy/.env.example", import.meta.url), "utf8")) as Record<string, string>;
  const exampleSecrets = Object.entries(example).filter(([name]) => /TOKEN|SECRET|PASSWORD/.test(name));

  it("finds the example's secrets to check", () => {
    expect(exampleSecrets.map(([name]) => name)).toEqual(
      expect.arrayContaining(["SUBDATA_GATEWAY_TOKEN", "SUBDATA_GATEWAY_TOKEN_SHA256", "SUBDATA_PAGE_TOKEN_SECRET", "POSTGRES_PASSWORD"]),
    );
  });

  it.each(exampleSecrets)("refuses deploy/.env.example's %s as a secret, naming the variable, not the value", (_, value) => {
    const message = problemsOf({ SUBDATA_PAGE_TOKEN_SECRET: value.padEnd(32, "-") });
    expect(message).toMatch(/SUBDATA_PAGE_TOKEN_SECRET is invalid: (is a placeholder|has fewer than)/);
    expect(message).not.toContain(value);
  });

  it.each(exampleSecrets.filter(([name]) => name.endsWith("PASSWORD")))("refuses deploy/.env.example's %s inside DATABASE_URL", (_, value) => {
    const message = problemsOf({ DATABASE_URL: `postgres://subdata_query:${encodeURIComponent(value)}@postgres:5432/subdata` });
    expect(message).toContain("DATABASE_URL is invalid: holds a placeholder password");
    expect(message).not.toContain(value);
  });

  it.each([
    "changeme-changeme-changeme-changeme",
    "CHANGE_ME_0123456789abcdefghijklmnop",
    "<your-service-token-of-32-characters>",
    "your-secret-goes-here-0123456789abcdef",
    "x".repeat(32),
    "abababababababababababababababab",
    "0".repeat(64),
  ])("refuses the typed value %s", (value) => {
    expect(problemsOf({ SUBDATA_PAGE_TOKEN_SECRET: value })).toContain("SUBDATA_PAGE_TOKEN_SECRET is invalid");
  });

  it("accepts generated values", () => {
    for (let i = 0; i < 50; i += 1) {
      const token = randomBytes(16).toString("hex");
      const password = randomBytes(24).toString("hex");
      expect(() => loadConfig(secretShape, { SUBDATA_PAGE_TOKEN_SECRET: token, DATABASE_URL: `postgres://u:${password}@h/db` })).not.toThrow();
    }
  });
});
