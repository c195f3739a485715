import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { emptyDirectory, json, runCli } from "./run-cli.ts";

describe("the subdata CLI", () => {
  it("prints help and exits 0", async () => {
    const run = await runCli(["--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/migrate/);
    expect(run.stdout).toMatch(/seed/);
    expect(run.stdout).toMatch(/subscriptions/);
  });

  it("names a missing DATABASE_URL and exits 1", async () => {
    const run = await runCli(["migrate"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/DATABASE_URL is not set: set it or run npm start once/);
    expect(run.stdout).toBe("");
  });

  it("with --json, prints the error as one JSON document on stdout", async () => {
    const run = await runCli(["migrate", "--json"]);
    expect(run.code).toBe(1);
    expect(json(run)).toEqual({ error: { code: "config", message: expect.stringMatching(/^DATABASE_URL is not set/) } });
  });

  it("refuses a DATABASE_URL that is not a postgres URL, naming it", async () => {
    const run = await runCli(["migrate"], { env: { DATABASE_URL: "mysql://nope" } });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/DATABASE_URL is invalid/);
  });

  it("answers a usage error with exit 1, as JSON with --json", async () => {
    const plain = await runCli(["frobnicate"]);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/unknown command 'frobnicate'/);
    const asJson = await runCli(["frobnicate", "--json"]);
    expect(asJson.code).toBe(1);
    expect(json(asJson)).toEqual({ error: { code: "usage", message: "unknown command 'frobnicate'" } });
  });

  it("falls back to .subdata/dev.env above the working directory, but the environment wins", async () => {
    const repo = emptyDirectory();
    mkdirSync(join(repo, ".git"));
    mkdirSync(join(repo, ".subdata"));
    mkdirSync(join(repo, "services", "cli"), { recursive: true });
    writeFileSync(join(repo, ".subdata", "dev.env"), `# written by npm start\nDATABASE_URL="${inject("adminDatabaseUrl")}"\n`);
    const cwd = join(repo, "services", "cli");

    const fromFile = await runCli(["migrate", "--json"], { cwd });
    expect(fromFile.code).toBe(0);
    expect(json(fromFile)).toEqual({ applied: [] });

    const overridden = await runCli(["migrate", "--json"], { cwd, env: { DATABASE_URL: "not-a-url" } });
    expect(overridden.code).toBe(1);
    expect(json(overridden)).toEqual({ error: { code: "config", message: expect.stringMatching(/^DATABASE_URL is invalid/) } });
  });

  it("migrate reports nothing to apply on a migrated database", async () => {
    const run = await runCli(["migrate"], { env: { DATABASE_URL: inject("adminDatabaseUrl") } });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/up to date/);
  });
});
