import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { authConfigShape } from "@subdata/auth";
import { maintainConfigShape } from "@subdata/cli";
import { consoleConfigShape } from "@subdata/console";
import { gatewayConfigShape } from "@subdata/gateway";
import { BUNDLE_ENTRIES, type BundleName, bundlePathFor } from "@subdata/local";
import { queryConfigShape } from "@subdata/query";
import { createLogger, spanExporterFromEnv, tracingFromEnv } from "@subdata/runtime";
import { webhookConfigShape } from "@subdata/webhook";
import { relayConfigShape } from "@subdata/relay";
import type { z } from "zod";
import { repositoryRoot } from "./render.ts";

/** A loadConfig shape: variable name → its zod schema. */
export type ConfigShape = Readonly<Record<string, z.ZodType>>;

/** Each service bundle (the CLI aside) and the config shape its entry point loads. */
const shapes: Readonly<Record<Exclude<BundleName, "subdata">, ConfigShape>> = {
  query: queryConfigShape,
  auth: authConfigShape,
  webhook: webhookConfigShape,
  relay: relayConfigShape,
  gateway: gatewayConfigShape,
  console: consoleConfigShape,
};

/** Each deployable's script as the image runs it (dist/bin/<name>.mjs), with its config shape (keys are the variable names). */
export const processConfigs: Readonly<Record<string, ConfigShape>> = Object.fromEntries(
  Object.entries(shapes).map(([name, shape]) => [bundlePathFor(name), shape]),
);

/**
 * Each CronJob's command line (script and arguments, as its container runs it) with the config shape it
 * loads. The CLI exports no spans.
 */
export const commandConfigs: Readonly<Record<string, ConfigShape>> = {
  [`${bundlePathFor("subdata")} maintain`]: maintainConfigShape,
};

/**
 * The OTEL_* variables tracingFromEnv reads (the config shapes do not list them): recorded by
 * running it on an environment that turns export on, so every branch reads, and the list follows the
 * code rather than a copy of it.
 */
const tracingVariables: readonly string[] = (() => {
  const read = new Set<string>();
  const env = new Proxy<NodeJS.ProcessEnv>(
    { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector.example:4318" },
    {
      get(target, name) {
        if (typeof name === "string") read.add(name);
        return typeof name === "string" ? target[name] : undefined;
      },
    },
  );
  void tracingFromEnv(env, "subdata-k8s-test", createLogger({ name: "k8s-test", level: "silent" })).shutdown();
  return [...read];
})();

/** Whether an entry point hands its environment to its tracing, directly or through createProcessObservability. */
function exportsSpans(entry: string): boolean {
  const source = readFileSync(join(repositoryRoot, entry), "utf8");
  return /tracingFromEnv\(process\.env\b/.test(source) || /createProcessObservability\(\{[^}]*\benv: process\.env\b/.test(source);
}

/** Every variable each deployable's process reads (keyed like processConfigs): its shape's, and the tracing ones if it exports spans. */
export const processVariables: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  Object.entries(shapes).map(([name, shape]) => [
    bundlePathFor(name),
    [...Object.keys(shape), ...(exportsSpans(BUNDLE_ENTRIES[name as keyof typeof shapes]) ? tracingVariables : [])],
  ]),
);

/**
 * The exporter a process would build from this environment (spanExporterFromEnv throws on a bad
 * endpoint or protocol, as at start-up), shut down at once: whether it would export.
 */
export async function exportsTracesWith(environment: NodeJS.ProcessEnv): Promise<boolean> {
  const exporter = spanExporterFromEnv(environment, createLogger({ name: "k8s-test", level: "silent" }));
  await exporter?.shutdown();
  return exporter !== undefined;
}

/** The variables a shape cannot do without (no default): the manifests must provide every one. */
export function requiredVariables(shape: ConfigShape): string[] {
  return Object.entries(shape)
    .filter(([, schema]) => !schema.safeParse(undefined).success)
    .map(([name]) => name);
}

/** A secret as `openssl rand` would make it (the config refuses uniform or example values). */
const generated = (): string => randomBytes(24).toString("base64url");
/** A SUBDATA_<CALLER>_TOKEN_SHA256 value: the hex SHA-256 of some token. */
const sha256Hex = (): string => randomBytes(32).toString("hex");

/** Values of the right form for the secrets the manifests take from Secrets, to load a config offline. */
export const placeholderSecrets: Readonly<Record<string, string>> = {
  DATABASE_URL: "postgres://subdata_role@postgres.example:5432/subdata",
  SUBDATA_GATEWAY_TOKEN: generated(),
  SUBDATA_CONSOLE_TOKEN: generated(),
  // Two hashes each, as during a rotation, so the list's validation runs too.
  SUBDATA_GATEWAY_TOKEN_SHA256: `${sha256Hex()},${sha256Hex()}`,
  SUBDATA_CONSOLE_TOKEN_SHA256: `${sha256Hex()},${sha256Hex()}`,
  SUBDATA_APP_TOKEN_SHA256: sha256Hex(),
  SUBDATA_CLI_TOKEN_SHA256: sha256Hex(),
  SUBDATA_PAGE_TOKEN_SECRET: generated(),
  SUBDATA_WEBHOOK_SECRET_KEY: randomBytes(32).toString("base64"),
  NATS_PASSWORD: generated(),
  // Optional keys (present during a rotation): loaded with a value, so their validation runs too.
  SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: generated(),
  SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS: randomBytes(32).toString("base64"),
  // components/tracing: the collector's API key, if it wants one.
  OTEL_EXPORTER_OTLP_HEADERS: "api-key=placeholder",
};
