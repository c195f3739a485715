import { randomBytes } from "node:crypto";
import type { RegisterCommands } from "../cli-context.ts";
import { CliError } from "../cli-error.ts";
import { databaseUrlSetting, withDatabase } from "../database.ts";
import { DEFAULT_BATCH_SIZE, runSeed } from "../seed/run-seed.ts";
import { dateToMicros, textToMicros } from "../seed/time.ts";

const MERCHANT_ID = /^mer_[A-Za-z0-9_]{1,64}$/;
const MAX_SUBSCRIPTIONS = 10_000_000;
// Rows span about two years before --now and a little after; past 2255 microseconds since the
// epoch are no longer exact in a JS number (seed/time.ts).
const EARLIEST_NOW = textToMicros("1970-01-01T00:00:00Z");
const LATEST_NOW = textToMicros("2250-01-01T00:00:00Z");

function positiveInteger(name: string, text: string, max: number): number {
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > max) {
    throw new CliError(`${name} must be a whole number from 1 to ${max.toLocaleString("en-US")}, got "${text}"`);
  }
  return Number(text);
}

interface SeedOptions {
  merchant: string;
  subscriptions: string;
  seed?: string;
  name?: string;
  now?: string;
  batchSize: string;
  events: boolean;
}

/** `subdata seed`: realistic, deterministic demo data for one merchant, streamed with COPY. */
export const registerSeedCommand: RegisterCommands = (program, context) => {
  program
    .command("seed")
    .description("add realistic subscriptions, customers, plans, charges and orders to a merchant (created if missing)")
    .requiredOption("--merchant <id>", "merchant id: mer_ + 1–64 of [A-Za-z0-9_]")
    .requiredOption("--subscriptions <n>", "how many subscriptions to add")
    .option("--seed <text>", "PRNG seed; the same seed on a merchant without data makes the same rows (default: random)")
    .option("--now <time>", "the moment data is generated relative to (RFC 3339; default: the current time)")
    .option("--name <name>", "merchant name, when the merchant is created")
    .option("--batch-size <n>", "subscriptions per transaction", String(DEFAULT_BATCH_SIZE))
    .option("--no-events", "bulk-load without row triggers: no subscription.created events, no FK re-checks (superuser only)")
    .addHelpText(
      "after",
      "\nSame --seed and --now on a merchant without data give identical rows (ids included). When the merchant\n" +
        "already has data, its row counts are mixed into the seed, so re-running adds new rows and never collides.",
    )
    .action(async (options: SeedOptions) => {
      if (!MERCHANT_ID.test(options.merchant)) {
        throw new CliError(`--merchant must be mer_ followed by 1–64 letters, digits or underscores, got "${options.merchant}"`);
      }
      const subscriptions = positiveInteger("--subscriptions", options.subscriptions, MAX_SUBSCRIPTIONS);
      const batchSize = positiveInteger("--batch-size", options.batchSize, 100_000);
      let now: number;
      try {
        now = options.now === undefined ? dateToMicros(new Date()) : textToMicros(options.now);
      } catch {
        throw new CliError(`--now must be an RFC 3339 time such as 2025-06-01T12:00:00Z, got "${options.now}"`);
      }
      if (now < EARLIEST_NOW || now >= LATEST_NOW) {
        throw new CliError(`--now must be from 1970 to 2249 (seeded times are exact microseconds until 2255), got "${options.now}"`);
      }
      const seed = options.seed ?? randomBytes(8).toString("hex");
      const databaseUrl = databaseUrlSetting(context);

      const started = performance.now();
      const progress = context.output.progress(subscriptions, "subscriptions");
      const result = await withDatabase(databaseUrl, (client) =>
        runSeed(client, {
          merchantId: options.merchant,
          ...(options.name === undefined ? {} : { merchantName: options.name }),
          subscriptions,
          seed,
          now,
          batchSize,
          captureChanges: options.events,
          onProgress: (written) => progress.update(written),
        }),
      )
        .catch((error: unknown) => {
          // 42501: only a superuser may set session_replication_role.
          if (!options.events && (error as { code?: string }).code === "42501") {
            throw new CliError("--no-events needs a superuser DATABASE_URL (it sets session_replication_role)");
          }
          throw error;
        })
        .finally(() => progress.stop());
      const seconds = (performance.now() - started) / 1000;

      const { counts } = result;
      context.output.result(
        { ...result, seconds: Number(seconds.toFixed(3)) },
        [
          `${result.merchantCreated ? "created" : "added to"} merchant ${result.merchantId} in ${seconds.toFixed(1)} s (seed ${seed}${result.salt ? `, salted with existing counts ${result.salt}` : ""})`,
          `  plans          ${counts.plans}`,
          `  customers      ${counts.customers}`,
          `  subscriptions  ${counts.subscriptions}`,
          `  charges        ${counts.charges}`,
          `  orders         ${counts.orders}`,
          `  line items     ${counts.lineItems}`,
        ].join("\n"),
      );
    });
};
