import { performance } from "node:perf_hooks";
import { beforeAll } from "vitest";
import { type DeliveryTestHarness, useDeliveryHarness } from "../../support/delivery-harness.ts";
import type { Receiver } from "./receiver.ts";

/**
 * The setup shared by the throughput files (delivery-throughput, ingest-throughput): the file's harness
 * and one receiver that answers `status` and records when each event arrived. They print figures and
 * assert only completeness and order.
 */

export interface Arrival {
  eventId: string;
  /** The request path: which endpoint it was sent to. */
  path: string;
  subscriptionId: string;
  version: number;
  /** performance.now() at arrival. */
  at: number;
}

export interface Measurement {
  h: DeliveryTestHarness;
  /** Set by beforeAll. */
  readonly receiver: Receiver;
  arrivals: Arrival[];
}

export function useMeasurement(tag: string, status: number): Measurement {
  const h = useDeliveryHarness(tag);
  const arrivals: Arrival[] = [];
  let receiver: Receiver | undefined;
  beforeAll(async () => {
    receiver = await h.receiver((request) => {
      const body = JSON.parse(request.body);
      arrivals.push({ eventId: body.id, path: request.url, subscriptionId: body.data.object.id, version: body.data.object.version, at: performance.now() });
      return { status };
    });
  });
  return {
    h,
    get receiver() {
      if (!receiver) throw new Error("the measurement receiver starts in beforeAll");
      return receiver;
    },
    arrivals,
  };
}

/** The p-th percentile (0–100) of ascending `sorted`. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}
