import { create } from "@bufbuild/protobuf";
import { DurationSchema, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { SummarizeDeliveriesResponse_HourSchema, SummarizeDeliveriesResponseSchema } from "@subdata/proto/subdata/webhook/v1/delivery_service_pb";
import { describe, expect, it } from "vitest";
import { deliveryChart } from "./delivery-chart.ts";

const START = Date.UTC(2026, 10, 25, 10);

function summary(busy: Record<number, { ok: number; failed: number; p50Ms: number; p95Ms: number }>) {
  return create(SummarizeDeliveriesResponseSchema, {
    startTime: timestampFromMs(START),
    endTime: timestampFromMs(START + 23.5 * 3_600_000),
    hours: Array.from({ length: 24 }, (_, index) => {
      const hour = busy[index];
      const ms = (value: number) => create(DurationSchema, { seconds: BigInt(Math.floor(value / 1000)), nanos: (value % 1000) * 1_000_000 });
      return create(SummarizeDeliveriesResponse_HourSchema, {
        startTime: timestampFromMs(START + index * 3_600_000),
        succeededCount: hour?.ok ?? 0,
        failedCount: hour?.failed ?? 0,
        latencyP50: hour ? ms(hour.p50Ms) : undefined,
        latencyP95: hour ? ms(hour.p95Ms) : undefined,
      });
    }),
  });
}

describe("the endpoint's 24-hour chart", () => {
  it("says the totals in words, draws both charts inline, and lists every hour in the table", () => {
    const markup = deliveryChart(summary({ 3: { ok: 9, failed: 1, p50Ms: 40, p95Ms: 120 }, 20: { ok: 0, failed: 2, p50Ms: 15_000, p95Ms: 15_000 } })).value;
    expect(markup).toContain("12 attempts, 9 succeeded (75 %), 3 failed; the slowest hour&#39;s p95 latency was 15 s.");
    expect(markup.match(/<svg /g)).toHaveLength(2);
    expect(markup).toContain('role="img"');
    expect(markup.match(/<tr><th scope="row">/g)).toHaveLength(24);
    expect(markup).toContain('<tr><th scope="row">13:00</th><td>9</td><td>1</td><td>90 %</td><td>40 ms</td><td>120 ms</td></tr>');
    // Nothing the strict CSP would block: no style attribute, no script, nothing fetched.
    expect(markup).not.toMatch(/style=|<script|href=|src=/);
  });

  it("shows no chart, only the sentence and the empty table, when nothing was attempted", () => {
    const markup = deliveryChart(summary({})).value;
    expect(markup).toContain("No attempts in the last 24 hours.");
    expect(markup).not.toContain("<svg");
    expect(markup.match(/<tr><th scope="row">/g)).toHaveLength(24);
  });
});
