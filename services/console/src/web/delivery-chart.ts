import type { Duration } from "@bufbuild/protobuf/wkt";
import type { SummarizeDeliveriesResponse } from "@subdata/proto/subdata/webhook/v1/delivery_service_pb";
import { html, type SafeHtml } from "./html.ts";

// The plot's geometry in SVG user units; the SVG scales to the width it is given (CSS), so one drawing
// serves a phone and a desktop.
const WIDTH = 480;
const HEIGHT = 150;
const LEFT = 44;
const RIGHT = 8;
const TOP = 10;
const BOTTOM = 22;
const PLOT_WIDTH = WIDTH - LEFT - RIGHT;
const PLOT_HEIGHT = HEIGHT - TOP - BOTTOM;

interface HourPoint {
  /** "07:00" (UTC). */
  label: string;
  succeeded: number;
  failed: number;
  p50Ms: number | null;
  p95Ms: number | null;
}

function milliseconds(duration: Duration | undefined): number | null {
  return duration ? Number(duration.seconds) * 1000 + duration.nanos / 1e6 : null;
}

function latencyText(ms: number | null): string {
  if (ms === null) return "—";
  return ms >= 1000 ? `${(ms / 1000).toFixed(ms >= 10_000 ? 0 : 1)} s` : `${Math.round(ms)} ms`;
}

function percent(part: number, whole: number): string {
  return whole === 0 ? "—" : `${Math.floor((part / whole) * 1000) / 10} %`;
}

function hourPoints(summary: SummarizeDeliveriesResponse): HourPoint[] {
  return summary.hours.map((hour) => ({
    label: new Date(Number(hour.startTime?.seconds ?? 0n) * 1000).toISOString().slice(11, 16),
    succeeded: hour.succeededCount,
    failed: hour.failedCount,
    p50Ms: milliseconds(hour.latencyP50),
    p95Ms: milliseconds(hour.latencyP95),
  }));
}

/** A round ceiling for an axis: 1, 2 or 5 times a power of ten, at least `value`. */
function niceCeiling(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((step) => step * power).find((candidate) => candidate >= value)!;
}

function slotX(index: number, count: number): number {
  return LEFT + (index * PLOT_WIDTH) / count;
}

function axis(top: string, points: HourPoint[]): SafeHtml {
  const ticks = points.map((point, index) => ({ point, index })).filter(({ index }) => index % 6 === 0 || index === points.length - 1);
  return html`<line class="chart-axis" x1="${LEFT}" y1="${TOP + PLOT_HEIGHT}" x2="${WIDTH - RIGHT}" y2="${TOP + PLOT_HEIGHT}"/>
<text class="chart-label" x="${LEFT - 4}" y="${TOP + 8}" text-anchor="end">${top}</text>
<text class="chart-label" x="${LEFT - 4}" y="${TOP + PLOT_HEIGHT}" text-anchor="end">0</text>
${ticks.map(
  ({ point, index }) =>
    html`<text class="chart-label" x="${slotX(index + 0.5, points.length).toFixed(1)}" y="${HEIGHT - 6}" text-anchor="middle">${point.label}</text>`,
)}`;
}

function attemptsSvg(points: HourPoint[], description: string): SafeHtml {
  const top = niceCeiling(Math.max(...points.map((point) => point.succeeded + point.failed)));
  const slot = PLOT_WIDTH / points.length;
  const barWidth = Math.max(slot - 3, 1);
  const bars = points.map((point, index) => {
    const x = (slotX(index, points.length) + (slot - barWidth) / 2).toFixed(1);
    const okHeight = (point.succeeded / top) * PLOT_HEIGHT;
    const failedHeight = (point.failed / top) * PLOT_HEIGHT;
    const base = TOP + PLOT_HEIGHT;
    return html`<g><title>${point.label} UTC: ${point.succeeded} succeeded, ${point.failed} failed</title>${
      point.succeeded
        ? html`<rect class="chart-ok" x="${x}" y="${(base - okHeight).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${okHeight.toFixed(1)}"/>`
        : ""
    }${
      point.failed
        ? html`<rect class="chart-failed" x="${x}" y="${(base - okHeight - failedHeight).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${failedHeight.toFixed(1)}"/>`
        : ""
    }</g>`;
  });
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="chart-attempts-title chart-attempts-desc" focusable="false">
<title id="chart-attempts-title">Attempts per hour, last 24 hours</title>
<desc id="chart-attempts-desc">${description}</desc>
${axis(String(top), points)}${bars}</svg>`;
}

/** A line through the hours that have a value; a gap where an hour had no attempt. */
function linePath(points: HourPoint[], value: (point: HourPoint) => number | null, top: number): string {
  let path = "";
  let drawing = false;
  points.forEach((point, index) => {
    const ms = value(point);
    if (ms === null) {
      drawing = false;
      return;
    }
    const x = slotX(index + 0.5, points.length).toFixed(1);
    const y = (TOP + PLOT_HEIGHT - (Math.min(ms, top) / top) * PLOT_HEIGHT).toFixed(1);
    path += `${drawing ? "L" : "M"}${x} ${y} `;
    drawing = true;
  });
  return path.trim();
}

function latencySvg(points: HourPoint[], description: string): SafeHtml {
  const top = niceCeiling(Math.max(...points.map((point) => point.p95Ms ?? 0)));
  const dots = (value: (point: HourPoint) => number | null, kind: string) =>
    points.map((point, index) => {
      const ms = value(point);
      if (ms === null) return "";
      const y = (TOP + PLOT_HEIGHT - (Math.min(ms, top) / top) * PLOT_HEIGHT).toFixed(1);
      return html`<circle class="chart-${kind}" cx="${slotX(index + 0.5, points.length).toFixed(1)}" cy="${y}" r="2.5"><title>${point.label} UTC: ${kind} ${latencyText(ms)}</title></circle>`;
    });
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="chart-latency-title chart-latency-desc" focusable="false">
<title id="chart-latency-title">Latency per hour (p50 and p95), last 24 hours</title>
<desc id="chart-latency-desc">${description}</desc>
${axis(latencyText(top), points)}
<path class="chart-line chart-p95" d="${linePath(points, (point) => point.p95Ms, top)}"/>
<path class="chart-line chart-p50" d="${linePath(points, (point) => point.p50Ms, top)}"/>
${dots((point) => point.p95Ms, "p95")}${dots((point) => point.p50Ms, "p50")}</svg>`;
}

/**
 * The endpoint's last 24 hours: attempts per hour (succeeded and failed, stacked) and their latency
 * (p50, p95), drawn as inline SVG (no script, no request, nothing the CSP has to allow), each chart
 * described in words for screen readers, with the same numbers as a table beside it.
 */
export function deliveryChart(summary: SummarizeDeliveriesResponse): SafeHtml {
  const points = hourPoints(summary);
  const succeeded = points.reduce((sum, point) => sum + point.succeeded, 0);
  const failed = points.reduce((sum, point) => sum + point.failed, 0);
  const total = succeeded + failed;
  const worstP95 = points.reduce<number | null>((worst, point) => (point.p95Ms === null ? worst : Math.max(worst ?? 0, point.p95Ms)), null);
  const summaryText =
    total === 0
      ? "No attempts in the last 24 hours."
      : `In the last 24 hours: ${total} ${total === 1 ? "attempt" : "attempts"}, ${succeeded} succeeded (${percent(succeeded, total)}), ${failed} failed; the slowest hour's p95 latency was ${latencyText(worstP95)}.`;
  const rows = points.map(
    (point) =>
      html`<tr><th scope="row">${point.label}</th><td>${point.succeeded}</td><td>${point.failed}</td><td>${percent(point.succeeded, point.succeeded + point.failed)}</td><td>${latencyText(point.p50Ms)}</td><td>${latencyText(point.p95Ms)}</td></tr>`,
  );
  return html`<section class="card" aria-labelledby="health-title">
<h2 id="health-title">Last 24 hours</h2>
<p id="health-summary">${summaryText}</p>
${
  total === 0
    ? ""
    : html`<div class="charts">
<figure>${attemptsSvg(points, summaryText)}<figcaption><span class="key key-ok"></span> succeeded <span class="key key-failed"></span> failed (attempts per hour, UTC)</figcaption></figure>
<figure>${latencySvg(points, `Latency per hour: the slowest p95 was ${latencyText(worstP95)}.`)}<figcaption><span class="key key-p50"></span> p50 <span class="key key-p95"></span> p95 latency</figcaption></figure>
</div>`
}
<details>
<summary>The numbers, hour by hour</summary>
<div class="table-wrap"><table id="health-table">
<caption class="hint">Attempts started in each hour (UTC), the last one still running.</caption>
<thead><tr><th scope="col">Hour</th><th scope="col">Succeeded</th><th scope="col">Failed</th><th scope="col">Success</th><th scope="col">p50</th><th scope="col">p95</th></tr></thead>
<tbody>${rows}</tbody></table></div>
</details>
</section>`;
}
