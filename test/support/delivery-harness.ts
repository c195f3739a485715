import { afterAll, afterEach, beforeEach } from "vitest";
import { createHarness, type Harness } from "../webhook-delivery/support/harness.ts";
import { type Receiver, type Responder, startReceiver } from "../webhook-delivery/support/receiver.ts";

/** What a delivery test works with: its harness, and receivers closed after the file. */
export interface DeliveryTestHarness extends Harness {
  /** Starts a receiver (see support/receiver.ts) that is closed with the harness. */
  receiver(responder?: Responder): Promise<Receiver>;
}

/**
 * Registers the hooks every delivery test file needs: a harness of its own for each test (a database,
 * and a JetStream stream and subjects named with `tag`), so pipelines and leftovers of one test never
 * meet the next, and tracking of the receivers its tests start. The returned object stands for the
 * current test's harness, so tests use it directly (`h.publish(…)`).
 */
export function useDeliveryHarness(tag: string): DeliveryTestHarness {
  let harness: Harness | undefined;
  const receivers: Receiver[] = [];
  beforeEach(async () => {
    harness = await createHarness(tag);
  });
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
  });
  const receiver = async (responder?: Responder) => {
    const r = await startReceiver(responder);
    receivers.push(r);
    return r;
  };
  // The harness exists only once beforeAll ran; every member is looked up on it at use.
  return new Proxy({} as DeliveryTestHarness, {
    get(_target, key) {
      if (key === "receiver") return receiver;
      if (!harness) throw new Error(`delivery harness "${tag}" used outside a test`);
      return Reflect.get(harness, key);
    },
  });
}
