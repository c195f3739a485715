import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "@connectrpc/connect";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { createServiceTransport } from "@subdata/runtime";
import { type HttpBenchOptions, type HttpResult, runHttpBench } from "./http-bench.ts";
import type { Scenario } from "./scenarios.ts";
import { type Stack, type StackOptions, startStack } from "./stack.ts";

/**
 * What tracing costs per request on the read path (gateway → query, auth): the same scenarios against
 * the gateway with OTLP export off (spans made, none exported) and on (every request sampled and
 * exported to a local OTLP/HTTP sink in the bench process, which answers 200 at once). One stack after
 * the other, on the same dataset; the figures are per-process CPU µs per request, rate and latency.
 */

export interface TracingRun {
  export: "off" | "on";
  results: HttpResult[];
  /** OTLP requests the sink received over the runs (none when off). */
  exportRequests: number;
  exportBytes: number;
}

/** A local OTLP/HTTP sink: counts requests and bytes, answers 200 with an empty JSON body. */
async function startSink(): Promise<{ url: string; requests: () => number; bytes: () => number; close(): Promise<void> }> {
  let requests = 0;
  let bytes = 0;
  const server = createServer((request, response) => {
    request.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    request.on("end", () => {
      requests++;
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    bytes: () => bytes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export async function runTracingBench(input: {
  stackOptions: Omit<StackOptions, "env" | "only">;
  /** The scenarios to run against a started stack. */
  scenarios: (stack: Stack) => Promise<Scenario[]>;
  /** The merchant the bench's API key belongs to. */
  merchantId: string;
  bench: Omit<HttpBenchOptions, "scenarios" | "targets" | "processes">;
  say(line: string): void;
}): Promise<TracingRun[]> {
  const sink = await startSink();
  const runs: TracingRun[] = [];
  try {
    for (const exporting of ["off", "on"] as const) {
      input.say(`tracing bench: export ${exporting}; starting the read path (query, auth, gateway)`);
      const stack = await startStack({
        ...input.stackOptions,
        only: ["query", "auth", "gateway"],
        env: exporting === "on" ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {},
      });
      const auth = createServiceTransport({ baseUrl: stack.authUrl, serviceToken: input.stackOptions.secrets.appToken });
      try {
        const created = await createClient(ApiKeyService, auth.transport).createApiKey({
          merchantId: input.merchantId,
          name: `npm run bench --tracing ${exporting}`,
        });
        const requestsBefore = sink.requests();
        const bytesBefore = sink.bytes();
        const results = await runHttpBench({
          ...input.bench,
          scenarios: await input.scenarios(stack),
          targets: [{ name: "gateway", origin: stack.gatewayUrl, headers: { authorization: `Bearer ${created.key}` } }],
          processes: stack.processes.map(({ name, pid }) => ({ name, pid })),
        });
        runs.push({ export: exporting, results, exportRequests: sink.requests() - requestsBefore, exportBytes: sink.bytes() - bytesBefore });
        await createClient(ApiKeyService, auth.transport)
          .revokeApiKey({ merchantId: input.merchantId, apiKeyId: created.apiKey?.id ?? "" })
          .catch(() => {});
      } finally {
        auth.close();
        await stack.stop();
      }
    }
  } finally {
    await sink.close();
  }
  return runs;
}

const fixed = (value: number | undefined, digits = 0) => (value === undefined || Number.isNaN(value) ? "–" : value.toFixed(digits));

/** A Markdown table: per scenario, export off and on side by side. */
export function renderTracingTable(runs: readonly TracingRun[]): string {
  const lines = [
    "| scenario | export | req/s | p50 ms | p99 ms | CPU µs/request: gateway / query / auth | peak RSS MB: gateway / query / auth |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  const scenarios = [...new Set(runs.flatMap((run) => run.results.map((result) => result.scenario)))];
  for (const scenario of scenarios) {
    for (const run of runs) {
      const result = run.results.find((entry) => entry.scenario === scenario);
      if (!result) continue;
      const cpu = ["gateway", "query", "auth"].map((name) => fixed(result.cpuUsPerRequest[name])).join(" / ");
      const rss = ["gateway", "query", "auth"].map((name) => fixed(result.peakRssMb[name], 1)).join(" / ");
      lines.push(
        `| ${scenario} | ${run.export} | ${fixed(result.requestsPerSecond)} | ${fixed(result.p50Ms, 1)} | ${fixed(result.p99Ms, 1)} | ${cpu} | ${rss} |`,
      );
    }
  }
  return lines.join("\n");
}
