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

  it("falls back to the project's .subdata/dev.env, but the environment wins", async () => {
    const repo = emptyDirectory();
    writeFileSync(join(repo, "package.json"), JSON.stringify({ name: "subdata", private: true }));
    mkdirSync(join(repo, ".subdata"));
    mkdirSync(join(repo, "services", "cli"), { recursive: true });
    writeFileSync(join(repo, "services", "cli", "package.json"), JSON.stringify({ name: "@subdata/cli" }));
    writeFileSync(join(repo, ".subdata", "dev.env"), `# written by npm start\nDATABASE_URL="${inject("adminDatabaseUrl")}"\n`);
    const cwd = join(repo, "services", "cli");

    const fromFile = await runCli(["migrate", "--json"], { cwd });
    expect(fromFile.code).toBe(0);
    expect(json(fromFile)).toEqual({ applied: [] });

    const overridden = await runCli(["migrate", "--json"], { cwd, env: { DATABASE_URL: "not-a-url" } });
    expect(overridden.code).toBe(1);
    expect(json(overridden)).toEqual({ error: { code: "config", message: expect.stringMatching(/^DATABASE_URL is invalid/) } });
  });

  it.each([
    ["a parent folder that is no subdata project", { git: false, name: undefined }],
    ["a parent folder above another repository", { git: true, name: undefined }],
    ["a parent project of another name", { git: false, name: "not-subdata" }],
  ])("never reads a dev.env from %s", async (_, layout) => {
    const outer = emptyDirectory();
    mkdirSync(join(outer, ".subdata"));
    writeFileSync(join(outer, ".subdata", "dev.env"), `DATABASE_URL="${inject("adminDatabaseUrl")}"\n`);
    if (layout.name !== undefined) writeFileSync(join(outer, "package.json"), JSON.stringify({ name: layout.name }));
    const cwd = join(outer, "work", "here");
    mkdirSync(cwd, { recursive: true });
    if (layout.git) mkdirSync(join(outer, "work", ".git"));

    const run = await runCli(["migrate", "--json"], { cwd });
    expect(run.code).toBe(1);
    expect(json(run)).toEqual({ error: { code: "config", message: expect.stringMatching(/^DATABASE_URL/) } });
  });

  it("migrate reports nothing to apply on a migrated database", async () => {
    const run = await runCli(["migrate"], { env: { DATABASE_URL: inject("adminDatabaseUrl") } });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/up to date/);
  });
});
