import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureNodeBuild, npmPack, satisfiesEngines } from "./supported-node.ts";

// Runs a command (npm start's launcher, npm test's vitest, the bench) on the supported Node: the machine's own
// when it satisfies engines, otherwise the pinned official build from the npm registry, fetched once into
// the user's cache and put first on the command's PATH, so it and every process it starts run on it.
// Usage: with-supported-node <command> [args…]

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const say = (line: string) => process.stderr.write(`[runtime]  ${line}\n`);

async function supportedNodeBin(): Promise<string | undefined> {
  const engines = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { engines: { node: string } }).engines.node;
  if (satisfiesEngines(process.versions.node, engines)) return undefined;
  const version = readFileSync(join(repoRoot, ".nvmrc"), "utf8").trim();
  const platform = `${process.platform}-${process.arch}`;
  const pinned = (JSON.parse(readFileSync(join(repoRoot, "deploy/local/node-runtime.json"), "utf8")) as { integrity: Record<string, string> }).integrity;
  const integrity = pinned[platform];
  if (!integrity) {
    throw new Error(
      `Node ${process.versions.node} does not satisfy ${engines}, and the npm registry has no official build for ${platform} to fetch: install Node ${version} (nvm install reads .nvmrc)`,
    );
  }
  const cacheDir = join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "subdata");
  const home = await ensureNodeBuild({ build: { version, platform, integrity }, cacheDir, pack: npmPack(process.env.npm_execpath) });
  say(`this machine's Node ${process.versions.node} does not satisfy ${engines}: running on Node ${version} from ${home}`);
  return join(home, "bin");
}

async function main(): Promise<void> {
  const [command, ...args] = process.argv.slice(2);
  if (!command) throw new Error("usage: with-supported-node <command> [args…]");
  const bin = await supportedNodeBin();
  const env = bin ? { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ""}` } : process.env;
  const child = spawn(command, args, { stdio: "inherit", env });
  // A supervisor's SIGTERM or SIGHUP reaches this process only. A terminal's Ctrl-C reaches the whole
  // process group, the command included, so it is not sent again (the launcher reads a second SIGINT as
  // "kill everything now").
  for (const signal of ["SIGTERM", "SIGHUP"] as const) process.on(signal, () => child.kill(signal));
  process.on("SIGINT", () => {});
  child.on("error", (error) => {
    say(`could not run ${command}: ${error.message}`);
    process.exit(127);
  });
  child.on("exit", (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}

main().catch((error: unknown) => {
  say(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
