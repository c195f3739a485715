// The CLI as a library: its entry point and the seed writer, for the benchmark and tests; the
// maintenance task's settings, for the manifests' tests.
export { runCli } from "./program.ts";
export { maintainConfigShape } from "./maintain/maintain-settings.ts";
export { setSubscriptionStatus } from "./set-subscription-status.ts";
export * from "./seed/rows.ts";
export { runSeed } from "./seed/run-seed.ts";
