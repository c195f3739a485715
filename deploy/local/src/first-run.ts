import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { PortalSessionService } from "@subdata/proto/subdata/console/v1/portal_session_service_pb";
import { createServiceTransport } from "@subdata/runtime";
import { merchantExists } from "./database.ts";
import { formatLogLine, prefixLines } from "./log-line.ts";
import { spawnManaged, type ManagedProcess } from "./managed-process.ts";

const DEMO_MERCHANT_ID = "mer_demo";
const SEED_ENTRY = "services/cli/bin/subdata.js";
const SEED_ARGS = ["seed", "--merchant", DEMO_MERCHANT_ID, "--subscriptions", "2000", "--seed", "42"];

/** First-run steps are remembered by marker files in the data dir, so each happens once. */
function markerPath(dataDir: string, name: "seeded" | "demo-key"): string {
  return join(dataDir, name);
}

export interface SeedOptions {
  repoRoot: string;
  dataDir: string;
  adminUrl: string;
  env: NodeJS.ProcessEnv;
  /** Child output lines. */
  print(line: string): void;
  /** The launcher's own notes. */
  say(line: string): void;
  /** Lets the launcher stop the seed if Ctrl-C arrives meanwhile. */
  track(process: ManagedProcess | undefined): void;
}

/**
 * Seeds the demo merchant through the CLI (`subdata seed`), once. Skipped, with a line saying why,
 * when already done or when the CLI is not built yet; a failed seed is reported and retried next run.
 */
export async function seedDemoMerchant(options: SeedOptions): Promise<void> {
  const marker = markerPath(options.dataDir, "seeded");
  if (existsSync(marker)) return;
  if (await merchantExists(options.adminUrl, DEMO_MERCHANT_ID)) {
    writeFileSync(marker, `${DEMO_MERCHANT_ID} already present ${new Date().toISOString()}\n`);
    return;
  }
  if (!existsSync(join(options.repoRoot, SEED_ENTRY))) {
    options.say(`seed: skipped, the CLI is not built yet (${SEED_ENTRY} does not exist); the next start will seed`);
    return;
  }
  options.say(`seed: first run, seeding ${DEMO_MERCHANT_ID} with 2000 subscriptions`);
  const seed = spawnManaged({
    name: "seed",
    command: process.execPath,
    args: [SEED_ENTRY, ...SEED_ARGS],
    cwd: options.repoRoot,
    env: options.env,
    onLine: (line) => options.print(prefixLines("seed", formatLogLine(line))),
  });
  options.track(seed);
  const exit = await seed.exited;
  options.track(undefined);
  if (exit.code === 0) {
    writeFileSync(marker, `${DEMO_MERCHANT_ID} ${new Date().toISOString()}\n`);
  } else if (!seed.stopRequested) {
    options.say(`seed: failed (exit ${exit.code ?? exit.signal}); the stack starts anyway and the next start tries again`);
  }
}

export interface DemoKeyOptions {
  dataDir: string;
  say(line: string): void;
  adminUrl: string;
  authUrl: string;
  gatewayUrl: string;
  serviceToken: string;
  print(line: string): void;
}

/**
 * Creates an API key for the demo merchant over ApiKeyService.CreateApiKey and prints it, once: the
 * value is never stored (only the key id goes into the marker) and cannot be shown again.
 */
export async function createDemoKey(options: DemoKeyOptions): Promise<void> {
  const marker = markerPath(options.dataDir, "demo-key");
  if (existsSync(marker) || !(await merchantExists(options.adminUrl, DEMO_MERCHANT_ID))) return;
  const { transport, close } = createServiceTransport({ baseUrl: options.authUrl, serviceToken: options.serviceToken });
  try {
    const response = await createClient(ApiKeyService, transport).createApiKey({
      merchantId: DEMO_MERCHANT_ID,
      name: "demo key (npm start)",
    });
    writeFileSync(marker, `${response.apiKey?.id ?? "created"}\n`);
    options.print("");
    options.print(`demo API key for ${DEMO_MERCHANT_ID} (shown once, not stored; make more with \`npx subdata keys create\`):`);
    options.print(`  ${response.key}`);
    options.print("try it:");
    options.print(`  curl -s -H "Authorization: Bearer ${response.key}" "${options.gatewayUrl}/api/v1/subscriptions?limit=2"`);
  } catch (error) {
    options.say(`demo key: could not create one (${(error as Error).message}); the next start tries again`);
  } finally {
    close();
  }
}

export interface DemoConsoleOptions {
  consoleUrl: string;
  serviceToken: string;
  print(line: string): void;
  say(line: string): void;
}

/**
 * Mints a portal session for the demo merchant, as the app would, and prints its one-time URL: every
 * start, since a link works once and for a few minutes.
 */
export async function printDemoConsoleLink(options: DemoConsoleOptions): Promise<void> {
  const { transport, close } = createServiceTransport({ baseUrl: options.consoleUrl, serviceToken: options.serviceToken });
  try {
    const created = await createClient(PortalSessionService, transport).createPortalSession({
      merchantId: DEMO_MERCHANT_ID,
      userId: "developer",
      userName: "Developer (npm start)",
    });
    options.print("");
    options.print(
      `API & integrations page for ${DEMO_MERCHANT_ID} (one-time link, open it within 5 minutes; \`npx subdata console open --merchant ${DEMO_MERCHANT_ID}\` for another):`,
    );
    options.print(`  ${created.url}`);
  } catch (error) {
    options.say(`console link: could not mint one (${(error as Error).message}); run \`npx subdata console open --merchant ${DEMO_MERCHANT_ID}\``);
  } finally {
    close();
  }
}
