// The CLI as a library: the seed generator and its COPY writer, and the stand-in app writes, for the benchmark and tests.
export {
  type ChargeChange,
  type ChargeDeletion,
  type ChargeRefund,
  deleteCharge,
  refundCharge,
  type RefundChargeInput,
  SETTABLE_CHARGE_STATUSES,
  type SetChargeStatusInput,
  type SettableChargeStatus,
  setChargeStatus,
} from "./change-charges.ts";
export {
  type AddLineItemInput,
  addOrderLineItem,
  deleteOrder,
  type LineItemAddition,
  type OrderDeletion,
  type OrderStatusChange,
  type SetOrderStatusInput,
  setOrderStatus,
} from "./change-orders.ts";
export type { CliContext, CliOutput, Progress, RegisterCommands } from "./cli-context.ts";
export { CliError } from "./cli-error.ts";
export { createCliContext, type CliContextOptions } from "./create-cli-context.ts";
export { inTransaction } from "./database.ts";
export { type DecimalAmount, parseDecimal, toMinorUnits } from "./option-parsers.ts";
export { runCli, type RunCliOptions } from "./program.ts";
export { setSubscriptionStatus, type SetStatusInput, type StatusChange } from "./set-subscription-status.ts";
export { CURRENCIES, type Currency } from "./seed/catalog.ts";
export { copyPlans, writeSeedBatch } from "./seed/copy-writer.ts";
export { createSeedGenerator, type SeedGenerator, type SeedGeneratorOptions } from "./seed/generator.ts";
export { createRandom, type Random } from "./seed/random.ts";
export * from "./seed/rows.ts";
export { DEFAULT_BATCH_SIZE, runSeed, type RunSeedOptions, type SeedCounts, type SeedResult } from "./seed/run-seed.ts";
export { dateToMicros, microsToText, textToMicros } from "./seed/time.ts";
