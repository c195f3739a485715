// The CLI as a library: the seed generator and its COPY writer, for the benchmark and tests.
export type { CliContext, CliOutput, Progress, RegisterCommands } from "./cli-context.ts";
export { CliError } from "./cli-error.ts";
export { createCliContext, type CliContextOptions } from "./create-cli-context.ts";
export { runCli, type RunCliOptions } from "./program.ts";
export { setSubscriptionStatus, type SetStatusInput, type StatusChange } from "./set-subscription-status.ts";
export { CURRENCIES, type Currency } from "./seed/catalog.ts";
export { copyPlans, inTransaction, writeSeedBatch } from "./seed/copy-writer.ts";
export { createSeedGenerator, type SeedGenerator, type SeedGeneratorOptions } from "./seed/generator.ts";
export { createRandom, type Random } from "./seed/random.ts";
export * from "./seed/rows.ts";
export { DEFAULT_BATCH_SIZE, runSeed, type RunSeedOptions, type SeedCounts, type SeedResult } from "./seed/run-seed.ts";
export { dateToMicros, microsToText, textToMicros } from "./seed/time.ts";
