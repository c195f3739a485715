import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { commandModules } from "./command-modules.ts";
import { runCli } from "./program.ts";

async function cli(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const chunks = { stdout: "", stderr: "" };
  stdout.on("data", (chunk: Buffer) => (chunks.stdout += chunk.toString()));
  stderr.on("data", (chunk: Buffer) => (chunks.stderr += chunk.toString()));
  const status = await runCli({ argv: ["node", "subdata", ...args], env: {}, cwd: tmpdir(), stdout, stderr, modules: commandModules });
  return { status, ...chunks };
}

/** Writes the script and a driver to a fresh directory and runs the driver (stand-ins, then the script, then the calls) in the real shell. */
function inShell(shell: "bash" | "zsh", script: string, driver: { before?: string; calls: string }): string {
  const dir = mkdtempSync(join(tmpdir(), "subdata-completion-"));
  writeFileSync(join(dir, "completion"), script);
  writeFileSync(join(dir, "driver"), `${driver.before ?? ""}\nsource ${JSON.stringify(join(dir, "completion"))}\n${driver.calls}`);
  return execFileSync(shell, shell === "zsh" ? ["-f", join(dir, "driver")] : ["--norc", "--noprofile", join(dir, "driver")], { encoding: "utf8" });
}

describe("subdata completion", () => {
  it("bash: completes commands, subcommands after global options, options after a dash, and nothing for an option's value", async () => {
    const run = await cli("completion", "bash");
    expect(run.status).toBe(0);
    const output = inShell("bash", run.stdout, {
      calls: `complete -p subdata
try() { COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _subdata; echo "\${COMPREPLY[*]}"; }
try subdata ""
try subdata ch
try subdata --json charges re
try subdata charges set-status ch_1 --fail
try subdata seed --merchant ""
try subdata completion ""
`,
    });
    expect(output.split("\n")).toEqual([
      "complete -F _subdata subdata",
      "migrate seed subscriptions charges orders keys webhooks audit console mirror maintain completion help",
      "charges",
      "refund",
      "--failure-code --failure-message",
      "",
      "bash zsh",
      "",
    ]);
  });

  it("zsh: offers commands with their descriptions, then the options of the command typed, and registers with compdef", async () => {
    const run = await cli("completion", "zsh");
    expect(run.status).toBe(0);
    expect(run.stdout.startsWith("#compdef subdata\n")).toBe(true);
    // The completion system's functions, replaced by ones that print what they were given.
    const output = inShell("zsh", run.stdout, {
      before: `_describe() { local -a list; list=("\${(@P)4}"); print -r -- "$4: \${(j:|:)list}"; }
compdef() { print -r -- "compdef $*"; }`,
      calls: `try() { words=("$@"); CURRENT=\${#words}; _subdata || print -r -- "nothing"; }
try subdata ""
try subdata orders --
try subdata mirror --to ""
`,
    });
    const lines = output.trimEnd().split("\n");
    expect(lines[0]).toBe("compdef _subdata subdata");
    expect(lines[1]).toMatch(/^commands: migrate:apply pending database migrations \(DATABASE_URL must own the schema\)\|seed:/);
    expect(lines[1]).toContain("|completion:print a shell completion script");
    expect(lines[2]).toBe("options: --help:display help for command|-h:display help for command|--json:print one JSON document on stdout and nothing else");
    expect(lines[3]).toBe("nothing");
  });

  it("refuses a shell it has no script for, naming the argument", async () => {
    const run = await cli("completion", "fish");
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/argument 'shell'.*bash, zsh/);
  });
});

describe("subdata --version", () => {
  it("prints the CLI's version and exits 0", async () => {
    const { default: manifest } = await import("../package.json", { with: { type: "json" } });
    const run = await cli("--version");
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(`${manifest.version}\n`);
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it("with --json, anywhere among the words, prints one JSON document naming the version", async () => {
    const { default: manifest } = await import("../package.json", { with: { type: "json" } });
    const run = await cli("seed", "--json", "--merchant", "-V");
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ version: manifest.version });
  });
});
