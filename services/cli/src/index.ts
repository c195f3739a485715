// The CLI as a library: its entry point and the seed writer, for the benchmark and tests.
export { runCli } from "./program.ts";
export { setSubscriptionStatus } from "./set-subscription-status.ts";
export * from "./seed/rows.ts";
export { runSeed } from "./seed/run-seed.ts";
