import { deliveryPipelineConfigShape } from "@subdata/webhook";
import { describe, expect, it } from "vitest";
import { type Harness, waitFor } from "./support/harness.ts";
import { percentile, useMeasurement } from "./support/measurement.ts";
import { startReceiver } from "./support/receiver.ts";

/**
 * Measures the delivery workers alone (claim → sign → POST → record) and prints the figures; asserts only
 * completeness and per-(endpoint, subscription) order, never timing. The backlog is written straight into
 * webhook_events/webhook_deliveries (ingest has its own measurement in ingest-throughput.test.ts), then a
 * pipeline with the production defaults (SUBDATA_WEBHOOK_CONCURRENCY's default) drains it:
 * 1. backlog to one fast endpoint → deliveries/s;
 * 2. the same backlog while a second endpoint of the merchant refuses every connection and keeps its
 *    deliveries waiting on a long retry → the healthy endpoint's deliveries/s (a dead receiver must not
 *    slow the others);
 * 3. single deliveries on an idle pipeline (INSERT + NOTIFY, as ResendEvent does) → insert → received p50/p99.
 * Knobs: MEASURE_DELIVERIES (backlog, default 2000), MEASURE_SUBSCRIPTIONS (default 200),
 * MEASURE_CONCURRENCY (default: the production default), MEASURE_SINGLES (phase 3, default 50).
 * A full run: MEASURE_DELIVERIES=20000 MEASURE_SUBSCRIPTIONS=2000 npx vitest run --project integration
 *   test/webhook-delivery/delivery-throughput.test.ts --testTimeout=600000
 */

const backlog = Number(process.env.MEASURE_DELIVERIES ?? 2_000);
const subscriptionCount = Number(process.env.MEASURE_SUBSCRIPTIONS ?? 200);
const concurrency = Number(process.env.MEASURE_CONCURRENCY ?? deliveryPipelineConfigShape.SUBDATA_WEBHOOK_CONCURRENCY.parse(undefined));
const singles = Number(process.env.MEASURE_SINGLES ?? 50);

describe("delivery throughput (figures printed, no timing assertions)", () => {
  const m = useMeasurement("delivery-throughput", 204);
  const { h, arrivals } = m;

  /** Events of `subscriptions` × `versions` (version-major, as a stream would carry them) and one delivery per endpoint. */
  async function insertBacklog(merchantId: string, endpointIds: string[], prefix: string, versions: number): Promise<void> {
    await h.admin.query(
      `WITH ev AS (
         INSERT INTO webhook_events (id, merchant_id, resource_id, type, version, occurred_at, body)
         SELECT format('evt_%s_%s_%s', $2::text, s, v), $1, format('sub_%s_%s', $2::text, s), 'subscription.updated', v, now(),
                json_build_object('id', format('evt_%s_%s_%s', $2::text, s, v), 'type', 'subscription.updated',
                                  'data', json_build_object('object', json_build_object('id', format('sub_%s_%s', $2::text, s), 'version', v)))::text
           FROM generate_series(1, $4::int) AS v, generate_series(1, $3::int) AS s
          ORDER BY v, s
         RETURNING id, resource_id, version
       )
       -- Due in version order, as ingest batches written one after another would be.
       INSERT INTO webhook_deliveries (merchant_id, endpoint_id, event_id, resource_id, version, next_attempt_at)
       SELECT $1, ep, ev.id, ev.resource_id, ev.version, now() - ($4::int - ev.version) * interval '1 millisecond'
         FROM ev, unnest($5::text[]) AS ep ORDER BY ev.version, ev.resource_id`,
      [merchantId, prefix, subscriptionCount, versions, endpointIds],
    );
  }

  function expectInOrder(path: string, prefix: string, versions: number): void {
    const seen = new Map<string, number[]>();
    for (const a of arrivals) {
      if (a.path !== path || !a.subscriptionId.startsWith(`sub_${prefix}_`)) continue;
      const list = seen.get(a.subscriptionId) ?? [];
      list.push(a.version);
      seen.set(a.subscriptionId, list);
    }
    expect(seen.size).toBe(subscriptionCount);
    const expected = Array.from({ length: versions }, (_, v) => v + 1);
    // At-least-once may repeat a version after a lost record; order must never go backwards.
    for (const list of seen.values()) expect([...new Set(list)]).toEqual(expected);
  }

  async function drain(
    label: string,
    merchantId: string,
    endpointIds: string[],
    path: string,
    prefix: string,
    extra: Parameters<Harness["startPipeline"]>[0] = {},
  ) {
    const versions = Math.ceil(backlog / subscriptionCount);
    const total = versions * subscriptionCount;
    await insertBacklog(merchantId, endpointIds, prefix, versions);
    const count = () => arrivals.filter((a) => a.path === path && a.subscriptionId.startsWith(`sub_${prefix}_`)).length;
    const start = performance.now();
    const pipeline = h.startPipeline({ concurrency, pollIntervalMs: 1_000, ...extra });
    await waitFor(`every ${label} delivery received`, () => count() >= total, 600_000);
    const ms = performance.now() - start;
    await waitFor(
      `every ${label} delivery recorded`,
      async () => {
        const { rows } = await h.admin.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'SUCCEEDED'",
          [endpointIds[0]],
        );
        return rows[0]!.n === total;
      },
      60_000,
    );
    await pipeline.stop();
    expectInOrder(path, prefix, versions);
    console.log(
      `[delivery-throughput] ${label}: ${total} deliveries (${subscriptionCount} subscriptions × ${versions} versions), concurrency ${concurrency}: ` +
        `${((total / ms) * 1000).toFixed(0)} deliveries/s (${ms.toFixed(0)} ms)`,
    );
  }

  it("drains a backlog to one endpoint in per-subscription order", async () => {
    const merchantId = await h.fixtures.merchant();
    const endpoint = await h.createEndpoint({ merchantId, url: `${m.receiver.origin}/one` });
    await drain("one endpoint", merchantId, [endpoint.id], "/one", "a");
  });

  it("drains a backlog to a healthy endpoint while another endpoint stays down", async () => {
    const merchantId = await h.fixtures.merchant();
    const healthy = await h.createEndpoint({ merchantId, url: `${m.receiver.origin}/healthy` });
    // A port nobody listens on: every attempt is a refused connection.
    const closed = await startReceiver();
    const deadUrl = closed.origin;
    await closed.close();
    const dead = await h.createEndpoint({ merchantId, url: `${deadUrl}/dead` });
    await drain("healthy endpoint beside a dead one", merchantId, [healthy.id, dead.id], "/healthy", "b", { retrySchedule: [0, 600_000] });
    const { rows } = await h.admin.query<{ attempts: number; pending: number }>(
      "SELECT coalesce(sum(attempt_count), 0)::int AS attempts, count(*) FILTER (WHERE status = 'PENDING')::int AS pending FROM webhook_deliveries WHERE endpoint_id = $1",
      [dead.id],
    );
    console.log(`[delivery-throughput] dead endpoint meanwhile: ${rows[0]!.attempts} attempts, ${rows[0]!.pending} deliveries still pending`);
  });

  it("reports insert → received latency for single deliveries on an idle pipeline", async () => {
    const merchantId = await h.fixtures.merchant();
    const endpoint = await h.createEndpoint({ merchantId, url: `${m.receiver.origin}/single` });
    const pipeline = h.startPipeline({ concurrency, pollIntervalMs: 1_000 });
    const latencies: number[] = [];
    for (let i = 1; i <= singles; i++) {
      const subscriptionId = `sub_c_${i}`;
      const before = arrivals.length;
      const at = performance.now();
      await h.admin.query(
        `WITH ev AS (
           INSERT INTO webhook_events (id, merchant_id, resource_id, type, version, occurred_at, body)
           VALUES ($3, $1, $4, 'subscription.updated', 1, now(), json_build_object('id', $3::text, 'data', json_build_object('object', json_build_object('id', $4::text, 'version', 1)))::text)
           RETURNING id
         ), d AS (
           INSERT INTO webhook_deliveries (merchant_id, endpoint_id, event_id, resource_id, version) SELECT $1, $2, id, $4, 1 FROM ev RETURNING 1
         )
         SELECT pg_notify('subdata_webhook_delivery', '') FROM d`,
        [merchantId, endpoint.id, `evt_c_${merchantId}_${i}`, subscriptionId],
      );
      const arrival = await waitFor("the single delivery", () => arrivals.slice(before).find((a) => a.subscriptionId === subscriptionId));
      latencies.push(arrival.at - at);
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 20));
    }
    await pipeline.stop();
    latencies.sort((a, b) => a - b);
    expect(latencies).toHaveLength(singles);
    console.log(
      `[delivery-throughput] idle: ${singles} single deliveries, insert → received p50 ${percentile(latencies, 50).toFixed(1)} ms, ` +
        `p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${latencies[latencies.length - 1]!.toFixed(1)} ms`,
    );
  });
});
