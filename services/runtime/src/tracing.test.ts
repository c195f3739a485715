import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { ROOT_CONTEXT, SpanKind } from "@opentelemetry/api";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "./logger.ts";
import { createCapturedLogger } from "./test-support/captured-logger.ts";
import { samplerFromEnv, spanExporterFromEnv, tracingFromEnv } from "./tracing.ts";

const logger = createLogger({ name: "test", level: "silent" });
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A local OTLP/HTTP receiver: every request's path, headers and body; answers `status`. */
async function receiver(status = 200) {
  const requests: Array<{ path: string; headers: IncomingHttpHeaders; body: Buffer }> = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      requests.push({ path: request.url ?? "", headers: request.headers, body: Buffer.concat(chunks) });
      response.writeHead(status, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const remote = (flags: string) => ({ get: (name: string) => (name === "traceparent" ? `00-${TRACE_ID}-b7ad6b7169203331-${flags}` : undefined) });

describe("tracingFromEnv", () => {
  it("exports finished spans as OTLP/HTTP JSON to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces, with OTEL_SERVICE_NAME, on shutdown at the latest", async () => {
    const collector = await receiver();
    const tracing = tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/`, OTEL_SERVICE_NAME: "renamed" }, "subdata-query", logger);
    expect(tracing.exporting).toBe(true);
    const span = tracing.tracer.startSpan(
      "GET /v1/subscriptions",
      { kind: SpanKind.SERVER, attributes: { "http.route": "/v1/subscriptions" } },
      tracing.extract(remote("01")),
    );
    span.end();
    // Follows the caller's decision: this one is not recorded.
    tracing.tracer.startSpan("unsampled", {}, tracing.extract(remote("00"))).end();
    await tracing.shutdown();

    expect(collector.requests).toHaveLength(1);
    const [request] = collector.requests;
    expect(request!.path).toBe("/v1/traces");
    expect(request!.headers["content-type"]).toBe("application/json");
    const body = JSON.parse(request!.body.toString("utf8"));
    const resource = body.resourceSpans[0];
    expect(resource.resource.attributes).toContainEqual({ key: "service.name", value: { stringValue: "renamed" } });
    expect(resource.resource.attributes).toContainEqual({ key: "service.namespace", value: { stringValue: "subdata" } });
    const spans = resource.scopeSpans.flatMap((scope: { spans: unknown[] }) => scope.spans);
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({
      traceId: TRACE_ID,
      parentSpanId: "b7ad6b7169203331",
      spanId: span.spanContext().spanId,
      name: "GET /v1/subscriptions",
      kind: 2,
    });
  });

  it("exports OTLP/HTTP protobuf when OTEL_EXPORTER_OTLP_PROTOCOL says so, to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, with OTEL_EXPORTER_OTLP_HEADERS", async () => {
    const collector = await receiver();
    const tracing = tracingFromEnv(
      {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/custom/traces`,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
        OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=k%3Dv,x-other=2",
      },
      "subdata-relay",
      logger,
    );
    tracing.tracer.startSpan("publish", { root: true }, ROOT_CONTEXT).end();
    await tracing.shutdown();
    expect(collector.requests.map((request) => [request.path, request.headers["content-type"]])).toEqual([["/custom/traces", "application/x-protobuf"]]);
    expect(collector.requests[0]!.headers).toMatchObject({ "x-api-key": "k=v", "x-other": "2" });
    // The span's name and the service's, as protobuf strings.
    expect(collector.requests[0]!.body.includes(Buffer.from("publish"))).toBe(true);
    expect(collector.requests[0]!.body.includes(Buffer.from("subdata-relay"))).toBe(true);
  });

  it("logs a refused export and drops its spans, without the collector's headers", async () => {
    const collector = await receiver(400);
    const { logger: captured, lines } = createCapturedLogger({ name: "test", level: "warn" });
    const tracing = tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }, "subdata-query", captured);
    tracing.tracer.startSpan("refused", {}, ROOT_CONTEXT).end();
    await tracing.shutdown();
    expect(collector.requests).toHaveLength(1);
    expect(lines.map((line) => JSON.parse(line))).toContainEqual(expect.objectContaining({ msg: "OTLP export failed; spans dropped", spans: 1 }));
  });

  it("exports nothing, and still makes spans with ids, when no endpoint is set", async () => {
    expect(spanExporterFromEnv({}, logger)).toBeUndefined();
    expect(spanExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" }, logger)).toBeUndefined();
    expect(spanExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" }, logger)).toBeUndefined();
    const tracing = tracingFromEnv({}, "subdata-query", logger);
    expect(tracing.exporting).toBe(false);
    const span = tracing.tracer.startSpan("local", {}, tracing.extract(remote("01")));
    expect(span.spanContext().traceId).toBe(TRACE_ID);
    span.end();
    await tracing.shutdown();
  });

  it("fails start-up on an unsupported protocol, an endpoint that is no http(s) URL, or an unknown sampler", () => {
    expect(() => spanExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, logger)).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL/,
    );
    expect(() => spanExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }, logger)).toThrow();
    expect(() => spanExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://c" }, logger)).toThrow(/http\(s\)/);
    expect(() => samplerFromEnv({ OTEL_TRACES_SAMPLER: "sometimes" })).toThrow(/OTEL_TRACES_SAMPLER=sometimes/);
    expect(() => samplerFromEnv({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
  });
});

describe("samplerFromEnv", () => {
  /** Whether a span started under `parent` (or as a root) is recorded with this environment's sampler. */
  function recorded(env: NodeJS.ProcessEnv, parent: "sampled" | "unsampled" | "root"): boolean {
    const tracing = tracingFromEnv(env, "subdata-test", logger);
    const context = parent === "root" ? ROOT_CONTEXT : tracing.extract(remote(parent === "sampled" ? "01" : "00"));
    return tracing.tracer.startSpan("s", {}, context).isRecording();
  }

  it("is parent-based by default: the caller's flag decides, and traces that start here are recorded", () => {
    expect([recorded({}, "sampled"), recorded({}, "unsampled"), recorded({}, "root")]).toEqual([true, false, true]);
  });

  it("samples new traces by OTEL_TRACES_SAMPLER_ARG with parentbased_traceidratio, still following callers", () => {
    const env = { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0" };
    expect([recorded(env, "sampled"), recorded(env, "unsampled"), recorded(env, "root")]).toEqual([true, false, false]);
    expect(recorded({ OTEL_TRACES_SAMPLER: "parentbased_always_off" }, "root")).toBe(false);
    // Not parent-based: the operator's choice overrides the caller's flag.
    expect(recorded({ OTEL_TRACES_SAMPLER: "always_on" }, "unsampled")).toBe(true);
    expect(recorded({ OTEL_TRACES_SAMPLER: "always_off" }, "sampled")).toBe(false);
  });
});
