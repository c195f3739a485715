import { createClaimRepository } from "../../services/webhook/src/delivery/claim-repository.ts";
import { ingestEvent } from "../../services/webhook/src/ingest/ingest-repository.ts";
import { recordAttempts } from "../../services/webhook/src/delivery/record-repository.ts";
import { renderedEvent } from "../../services/webhook/src/ingest/event-message.ts";
import { changeEventFromSubscriptionEvent } from "@subdata/events";
import { describe, expect, it } from "vitest";
import { useDeliveryHarness } from "../support/delivery-harness.ts";
import { attemptsOf, newSubscriptionId, subscriptionEvent, succeededAttempt, waitFor } from "./support/harness.ts";

/**
 * An endpoint deleted (DeleteEndpoint, ON DELETE CASCADE) while attempts to it are being recorded.
 * The recorder writes many endpoints' attempts in one transaction: the deleted endpoint's must be
 * dropped, not fail the whole batch — otherwise every other endpoint's outcome in it is lost too and
 * those deliveries are sent again after their lease.
 */
describe("an endpoint deleted while its attempts are recorded", () => {
  const h = useDeliveryHarness("deleted-in-flight");

  it("records the other endpoints' attempts and drops the deleted one's", async () => {
    const merchantId = await h.fixtures.merchant();
    const doomed = await h.createEndpoint({ merchantId, url: "http://127.0.0.1:9/doomed" });
    const kept = await h.createEndpoint({ merchantId, url: "http://127.0.0.1:9/kept" });
    await ingestEvent(
      h.pool,
      renderedEvent(changeEventFromSubscriptionEvent(subscriptionEvent({ merchantId, subscriptionId: newSubscriptionId(), version: 1 }))),
    );
    const { claimed } = await createClaimRepository(h.pool).claimDue({
      limit: 10,
      healthyCap: 10,
      failingCap: 1,
      merchantCap: 10,
      fullEndpointIds: [],
      leaseMs: 60_000,
      scanLimit: 64,
    });
    expect(claimed.map((d) => d.endpointId).sort()).toEqual([doomed.id, kept.id].sort());
    const finished = claimed.map(succeededAttempt);

    // The delete holds its rows until it commits; the recording must wait for it, then go on without them.
    const deleter = await h.admin.connect();
    let committed = false;
    try {
      await deleter.query("BEGIN");
      await deleter.query("DELETE FROM webhook_endpoints WHERE id = $1", [doomed.id]);
      const recording = recordAttempts(h.pool, finished, { disableAfterMs: 86_400_000, disableReason: "test" });
      await waitFor("the recording waits for the delete's locks", async () => {
        const { rows } = await h.admin.query<{ waiting: number }>(
          "SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND application_name = 'test-whd-deleted-in-flight'",
        );
        return rows[0]!.waiting > 0;
      });
      await deleter.query("COMMIT");
      committed = true;
      await expect(recording).resolves.toEqual(new Map());
    } finally {
      // A failed wait must not hand an open transaction (and its locks) back to the pool.
      if (!committed) await deleter.query("ROLLBACK").catch(() => {});
      deleter.release();
    }

    const keptDelivery = claimed.find((d) => d.endpointId === kept.id)!;
    const { rows } = await h.admin.query("SELECT status FROM webhook_deliveries WHERE id = $1", [keptDelivery.id]);
    expect(rows).toEqual([{ status: "SUCCEEDED" }]);
    expect(await attemptsOf(h.admin, keptDelivery.id)).toMatchObject([{ response_status: 204, error_class: "NONE" }]);
    const doomedDelivery = claimed.find((d) => d.endpointId === doomed.id)!;
    expect((await h.admin.query("SELECT 1 FROM webhook_deliveries WHERE id = $1", [doomedDelivery.id])).rowCount).toBe(0);
    expect((await h.admin.query("SELECT 1 FROM webhook_attempts WHERE delivery_id = $1", [doomedDelivery.id])).rowCount).toBe(0);
  });
});
