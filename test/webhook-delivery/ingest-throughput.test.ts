import { describe, expect, it } from "vitest";
import { newSubscriptionId, waitFor } from "./support/harness.ts";
import { percentile, useMeasurement } from "./support/measurement.ts";

/**
 * Measures ingest and end-to-end delivery with the production worker defaults (16 in flight, a quarter
 * per endpoint) and prints the figures; asserts only completeness and per-subscription order, never
 * timing. Phase 1 drains a backlog published before the pipeline starts (ingest events/s, deliveries/s);
 * phase 2 publishes at a steady rate and reports publish → receiver latency.
 * Knobs (defaults keep it short inside the suite): MEASURE_EVENTS (backlog, default 1000),
 * MEASURE_SUBSCRIPTIONS (the backlog's subscriptions, default 200), MEASURE_ENDPOINTS (default 1),
 * MEASURE_RATE (events/s in phase 2, default 200), MEASURE_SECONDS (phase 2 length, default 2).
 * A full run: MEASURE_EVENTS=5000 MEASURE_RATE=1000 MEASURE_SECONDS=5 npx vitest run --project integration
 *   test/webhook-delivery/ingest-throughput.test.ts --testTimeout=600000
 */

const backlog = Number(process.env.MEASURE_EVENTS ?? 1_000);
const subscriptionCount = Number(process.env.MEASURE_SUBSCRIPTIONS ?? 200);
const endpointCount = Number(process.env.MEASURE_ENDPOINTS ?? 1);
const rate = Number(process.env.MEASURE_RATE ?? 200);
const seconds = Number(process.env.MEASURE_SECONDS ?? 2);

describe("ingest and delivery throughput (figures printed, no timing assertions)", () => {
  const m = useMeasurement("throughput", 200);
  const { h, arrivals } = m;

  it("stores a backlog in stream order and delivers it in per-subscription order", async () => {
    const merchantId = await h.fixtures.merchant();
    for (let i = 0; i < endpointCount; i++) await h.createEndpoint({ merchantId, url: `${m.receiver.origin}/hook-${i}` });
    const subscriptions = Array.from({ length: subscriptionCount }, () => newSubscriptionId());
    const versions = Math.ceil(backlog / subscriptionCount);
    const total = versions * subscriptionCount;

    const publishStart = performance.now();
    for (let version = 1; version <= versions; version++) {
      // One version of every subscription per round: stream order is version order per subscription.
      await h.publishAll(subscriptions.map((subscriptionId) => ({ merchantId, subscriptionId, version })));
    }
    const publishMs = performance.now() - publishStart;

    const start = performance.now();
    h.startPipeline({ concurrency: 16, pollIntervalMs: 1_000 });
    await waitFor(
      "every event stored",
      async () => {
        const { rows } = await h.admin.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_events WHERE merchant_id = $1", [merchantId]);
        return rows[0]!.n === total;
      },
      600_000,
    );
    const ingestMs = performance.now() - start;
    await waitFor("every delivery received", () => arrivals.length >= total * endpointCount, 600_000);
    const deliverMs = performance.now() - start;

    for (let i = 0; i < endpointCount; i++) {
      for (const subscriptionId of subscriptions) {
        const seen = arrivals.filter((a) => a.path === `/hook-${i}` && a.subscriptionId === subscriptionId).map((a) => a.version);
        expect(seen).toEqual(Array.from({ length: versions }, (_, v) => v + 1));
      }
    }
    console.log(
      `[ingest-throughput] backlog ${total} events (${subscriptionCount} subscriptions) × ${endpointCount} endpoint(s): published in ${publishMs.toFixed(0)} ms; ` +
        `ingest ${((total / ingestMs) * 1000).toFixed(0)} events/s (${ingestMs.toFixed(0)} ms); ` +
        `end to end ${(((total * endpointCount) / deliverMs) * 1000).toFixed(0)} deliveries/s (${deliverMs.toFixed(0)} ms)`,
    );
  });

  it.skipIf(endpointCount === 0)("reports publish → receiver latency at a steady publish rate", async () => {
    const merchantId = await h.fixtures.merchant();
    for (let i = 0; i < endpointCount; i++) await h.createEndpoint({ merchantId, url: `${m.receiver.origin}/steady-${i}` });
    h.startPipeline({ concurrency: 16, pollIntervalMs: 1_000 });
    const subscriptions = Array.from({ length: subscriptionCount }, () => newSubscriptionId());
    const publishedAt = new Map<string, number>();
    const first = arrivals.length;
    const total = rate * seconds;
    const tickMs = 20;
    const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
    const start = performance.now();
    let sent = 0;
    while (sent < total) {
      const batch: Promise<void>[] = [];
      for (let i = 0; i < perTick && sent < total; i++, sent++) {
        const subscriptionId = subscriptions[sent % subscriptionCount]!;
        const version = Math.floor(sent / subscriptionCount) + 1;
        const at = performance.now();
        batch.push(h.publish({ merchantId, subscriptionId, version }).then((event) => void publishedAt.set(event.id, at)));
      }
      await Promise.all(batch);
      const due = start + (sent / rate) * 1000;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    const publishSeconds = (performance.now() - start) / 1000;
    await waitFor("every steady delivery received", () => arrivals.length - first >= total * endpointCount, 600_000);
    const latencies = arrivals
      .slice(first)
      .map((a) => a.at - (publishedAt.get(a.eventId) ?? Number.NaN))
      .filter((ms) => Number.isFinite(ms))
      .sort((a, b) => a - b);
    expect(latencies).toHaveLength(total * endpointCount);
    console.log(
      `[ingest-throughput] steady ${(total / publishSeconds).toFixed(0)} events/s × ${endpointCount} endpoint(s) for ${publishSeconds.toFixed(1)} s: ` +
        `publish → received p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms, ` +
        `max ${latencies[latencies.length - 1]!.toFixed(0)} ms`,
    );
  });
});
