import { randomBytes } from "node:crypto";
import type { RegisterCommands } from "../cli-context.ts";
import { CliError } from "../cli-error.ts";
import { databaseUrlSetting, withDatabase } from "../database.ts";
import { parseRfc3339, parseWholeNumber } from "../option-parsers.ts";
import { DEFAULT_BATCH_SIZE, runSeed } from "../seed/run-seed.ts";
import { dateToMicros, SECOND_US, textToMicros } from "../seed/time.ts";

const MERCHANT_ID = /^mer_[A-Za-z0-9_]{1,64}$/;
const MAX_SUBSCRIPTIONS = 10_000_000;
const MAX_BATCH_SIZE = 100_000;
// Rows span about two years before --now and a little after; past 2255 microseconds since the
// epoch are no longer exact in a JS number (seed/time.ts).
const EARLIEST_NOW_TEXT = "1970-01-01T00:00:00Z";
const LATEST_NOW_TEXT = "2250-01-01T00:00:00Z"; // exclusive
const EARLIEST_NOW = textToMicros(EARLIEST_NOW_TEXT);
const LATEST_NOW = textToMicros(LATEST_NOW_TEXT);

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
    .option("--now <time>", "the moment data is generated relative to (RFC 3339 with an offset, e.g. 2025-06-01T12:00:00Z; default: the current time)")
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
      const subscriptions = parseWholeNumber(options.subscriptions, "--subscriptions", { min: 1, max: MAX_SUBSCRIPTIONS });
      const batchSize = parseWholeNumber(options.batchSize, "--batch-size", { min: 1, max: MAX_BATCH_SIZE });
      let now = dateToMicros(new Date());
      if (options.now !== undefined) {
        // Whole microseconds, as Postgres keeps them. Past 2255 the product is inexact, but far enough
        // past LATEST_NOW that the check refuses it all the same.
        const time = parseRfc3339(options.now, "--now");
        now = Number(time.seconds) * SECOND_US + Math.floor(time.nanos / 1_000);
        if (now < EARLIEST_NOW || now >= LATEST_NOW) {
          throw new CliError(
            `--now must be from ${EARLIEST_NOW_TEXT} and before ${LATEST_NOW_TEXT} (seeded times are exact microseconds until 2255), got "${options.now}"`,
          );
        }
      }
      const seed = options.seed ?? randomBytes(8).toString("hex");
      const databaseUrl = databaseUrlSetting(context);

      const started = performance.now();
      const progress = context.output.progress(subscriptions, "subscriptions");
      const result = await withDatabase(databaseUrl, context.signal, (client) =>
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
