import { changeEventFromSubscriptionEvent } from "@subdata/events";
import { describe, expect, it } from "vitest";
import { type ClaimOptions, createClaimRepository } from "../../services/webhook/src/delivery/claim-repository.ts";
import { recordAttempts } from "../../services/webhook/src/delivery/record-repository.ts";
import { renderedEvent } from "../../services/webhook/src/ingest/event-message.ts";
import { ingestEvent } from "../../services/webhook/src/ingest/ingest-repository.ts";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { newSubscriptionId, subscriptionEvent, succeededAttempt } from "./support/harness.ts";

/**
 * Deferral (claim-repository.ts): the versions waiting behind a head in flight leave the due index; one
 * that has waited long is deferred for as long again (up to ten leases), so it does not come back due at
 * every lease end, and the recorder still makes each next version due the moment its head finishes.
 */

const LEASE_MS = 60_000;

const options = (overrides: Partial<ClaimOptions> = {}): ClaimOptions => ({
  limit: 10,
  healthyCap: 10,
  failingCap: 1,
  merchantCap: 10,
  fullEndpointIds: [],
  leaseMs: LEASE_MS,
  scanLimit: 256,
  ...overrides,
});

describe("deferral behind a head in flight", () => {
  const h = useDeliveryHarness("deferral");

  it("defers long-waiting versions for as long again, capped, and the recorder still releases each in turn", async () => {
    const merchantId = await h.fixtures.merchant();
    await h.createEndpoint({ merchantId, url: "http://127.0.0.1:9/hook" });
    const subscriptionId = newSubscriptionId();
    for (let version = 1; version <= 4; version++) {
      await ingestEvent(h.pool, renderedEvent(changeEventFromSubscriptionEvent(subscriptionEvent({ merchantId, subscriptionId, version }))));
    }
    const claims = createClaimRepository(h.pool);
    const first = await claims.claimDue(options());
    expect(first.claimed.map((d) => d.version)).toEqual([1n]);

    // Versions 3 and 4 have waited an hour; version 2 only now.
    await h.admin.query("UPDATE webhook_deliveries SET created_at = now() - interval '1 hour' WHERE version >= 3");
    // The scan holds only rows behind the head in flight and nothing is claimable: they are deferred.
    const second = await claims.claimDue(options({ scanLimit: 3 }));
    expect({ claimed: second.claimed.length, deferred: second.deferred }).toEqual({ claimed: 0, deferred: 3 });
    const { rows } = await h.admin.query<{ version: string; wait_s: number }>(
      `SELECT d.version::text AS version, extract(epoch FROM d.next_attempt_at - head.next_attempt_at)::float8 AS wait_s
         FROM webhook_deliveries d, webhook_deliveries head
        WHERE head.id = $1 AND d.id <> head.id ORDER BY d.version`,
      [first.claimed[0]!.id],
    );
    // Version 2 waits for the head's lease (the fallback if its release were missed); 3 and 4 for ten
    // leases from now (nine after the head's lease), not the hour they have waited.
    expect(rows[0]).toEqual({ version: "2", wait_s: 0 });
    for (const row of rows.slice(1)) {
      expect(row.wait_s).toBeGreaterThan((9 * LEASE_MS) / 1000 - 5);
      expect(row.wait_s).toBeLessThanOrEqual((10 * LEASE_MS) / 1000);
    }

    // Each finished head makes the next version due at once, however far it was deferred.
    let head = first.claimed[0]!;
    for (const version of [2n, 3n, 4n]) {
      await recordAttempts(h.pool, [succeededAttempt(head)], { disableAfterMs: 86_400_000, disableReason: "test" });
      const next = await claims.claimDue(options());
      expect(next.claimed.map((d) => d.version)).toEqual([version]);
      head = next.claimed[0]!;
    }
  });
});
