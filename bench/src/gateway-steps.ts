/**
 * Where a gateway request's time goes, from the gateway's own Prometheus metrics read before and after
 * a run: means over the run's requests of the wait for a query slot, the query call, the wait for the
 * audit record, and the whole request as the gateway timed it. Means, not percentiles: the histograms'
 * buckets are too coarse for a p99, and a sum divided by a count is exact.
 */

export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface GatewaySteps {
  /** Requests the gateway answered during the run (API routes and probes alike). */
  requests: number;
  /** Whole request as Fastify timed it (subdata_http_request_duration_seconds). */
  requestMs: number;
  /** Waiting for one of the gateway's query slots (subdata_gateway_upstream_queue_seconds). */
  queryQueueMs: number;
  /** The query-service call itself (subdata_rpc_client_duration_seconds, query-service RPCs). */
  queryCallMs: number;
  /** Waiting for the audit record (subdata_gateway_audit_wait_seconds): the batch in flight, then its own. */
  auditWaitMs: number;
  /** Reads per RecordReads call (subdata_gateway_audit_batch_reads). */
  readsPerAuditCall: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a Prometheus text exposition (comments and blank lines skipped). */
export function parsePrometheusText(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = SAMPLE.exec(line.trim());
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? "").matchAll(LABEL)) labels[name!] = value!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

function sumOf(samples: readonly MetricSample[], name: string, match: (labels: Record<string, string>) => boolean = () => true): number {
  return samples.filter((sample) => sample.name === name && match(sample.labels)).reduce((sum, sample) => sum + sample.value, 0);
}

/** Calls to the query service: everything but the auth service's two APIs. */
const isQueryRpc = (labels: Record<string, string>) => !/^subdata\.(auth|audit)\./.test(labels.rpc_service ?? "");

/** Means of each step over what happened between the two scrapes; NaN where nothing was counted. */
export function stepsBetween(before: readonly MetricSample[], after: readonly MetricSample[]): GatewaySteps {
  const delta = (name: string, match?: (labels: Record<string, string>) => boolean) => sumOf(after, name, match) - sumOf(before, name, match);
  const meanMs = (histogram: string, match?: (labels: Record<string, string>) => boolean) =>
    (delta(`${histogram}_sum`, match) * 1000) / delta(`${histogram}_count`, match);
  const reads = delta("subdata_gateway_audit_batch_reads_sum");
  return {
    requests: delta("subdata_http_request_duration_seconds_count"),
    requestMs: meanMs("subdata_http_request_duration_seconds"),
    queryQueueMs: meanMs("subdata_gateway_upstream_queue_seconds", (labels) => labels.upstream === "query"),
    queryCallMs: meanMs("subdata_rpc_client_duration_seconds", isQueryRpc),
    auditWaitMs: meanMs("subdata_gateway_audit_wait_seconds"),
    readsPerAuditCall: reads / delta("subdata_gateway_audit_batch_reads_count"),
  };
}

/** The gateway's metrics now, or undefined if they could not be read (the run is measured anyway). */
export async function scrapeMetrics(url: string): Promise<MetricSample[] | undefined> {
  try {
    const response = await fetch(url);
    return response.ok ? parsePrometheusText(await response.text()) : undefined;
  } catch {
    return undefined;
  }
}
