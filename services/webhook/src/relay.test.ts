import { createLogger } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import type { EventPublisher } from "./event-stream.ts";
import type { OutboxRepository } from "./outbox-repository.ts";
import { createRelay } from "./relay.ts";

const logger = createLogger({ name: "relay-test", level: "silent" });
const publisher: EventPublisher = { publish: async () => ({ seq: 1, duplicate: false }) };

/** A repository whose claims return nothing and report how many were open at once. */
function countingRepository() {
  let open = 0;
  let most = 0;
  let claims = 0;
  const repository: OutboxRepository = {
    async withClaimedBatch() {
      open += 1;
      claims += 1;
      most = Math.max(most, open);
      await new Promise((resolve) => setTimeout(resolve, 20));
      open -= 1;
      return { claimed: 0, outcome: { publishedIds: [], failures: [] } };
    },
    purgePublished: async () => 0,
  };
  return { repository, most: () => most, claims: () => claims, open: () => open };
}

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe("createRelay", () => {
  it("runs `rounds` claim rounds side by side", async () => {
    const counted = countingRepository();
    const relay = createRelay({ repository: counted.repository, publisher, logger, batchSize: 10, rounds: 3, pollIntervalMs: 5 });
    relay.start();
    await new Promise((resolve) => setTimeout(resolve, 120));
    await relay.stop();
    expect(counted.most()).toBe(3);
  });

  it("runs one round at a time by default", async () => {
    const counted = countingRepository();
    const relay = createRelay({ repository: counted.repository, publisher, logger, batchSize: 10, pollIntervalMs: 5 });
    relay.start();
    await new Promise((resolve) => setTimeout(resolve, 120));
    await relay.stop();
    expect(counted.claims()).toBeGreaterThan(1);
    expect(counted.most()).toBe(1);
  });

  it("wakes every waiting round on wake()", async () => {
    const counted = countingRepository();
    const relay = createRelay({ repository: counted.repository, publisher, logger, batchSize: 10, rounds: 2, pollIntervalMs: 60_000 });
    relay.start();
    // Both rounds claimed (nothing) and now wait for a wake-up or the 60 s poll.
    await until(() => counted.claims() === 2 && counted.open() === 0);
    await new Promise((resolve) => setTimeout(resolve, 10));
    relay.wake();
    await until(() => counted.claims() === 4);
    await relay.stop();
    expect(counted.claims()).toBe(4);
  });
});
