import type { IdFactory } from "./ids.ts";
import type { Random } from "./random.ts";

/** What every part of the generator draws from. */
export interface SeedContext {
  /** Content: statuses, names, amounts, times. Independent of the merchant id. */
  readonly random: Random;
  /** Ids only, from their own stream, so the same content gets other ids for another merchant. */
  readonly newId: IdFactory;
  readonly merchantId: string;
  /** The generator's "now", in microseconds: every row's created_at is at or before it. */
  readonly now: number;
}

/** An integer number of microseconds in [min, max). */
export function randomMicros(context: SeedContext, min: number, max: number): number {
  return Math.floor(context.random.between(min, Math.max(min, max)));
}
