import { describe, expect, it } from "vitest";
import { createLogger } from "./logger.ts";
import { createOtlpSpanExporter, otlpTraceRequest, parseOtlpHeaders, spanExporterFromEnv, type SpanRecord } from "./span-exporter.ts";

const logger = createLogger({ name: "test", level: "silent" });
const span = (name: string): SpanRecord => ({
  traceId: "0af7651916cd43dd8448eb211c80319c",
  spanId: "b7ad6b7169203331",
  parentSpanId: "00f067aa0ba902b7",
  name,
  kind: "server",
  startMs: 1_700_000_000_000.5,
  endMs: 1_700_000_000_010.25,
  attributes: { "http.route": "/v1/subscriptions", "http.response.status_code": 200, ok: true },
});

describe("OTLP span export", () => {
  it("renders the OTLP/HTTP JSON mapping: hex ids, nanosecond strings, typed attributes", () => {
    const body = otlpTraceRequest("subdata-gateway", [span("GET /v1/subscriptions")]);
    const resource = body.resourceSpans[0]!;
    expect(resource.resource.attributes).toContainEqual({ key: "service.name", value: { stringValue: "subdata-gateway" } });
    expect(resource.scopeSpans[0]!.spans[0]).toEqual({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      parentSpanId: "00f067aa0ba902b7",
      name: "GET /v1/subscriptions",
      kind: 2,
      startTimeUnixNano: "1700000000000500000",
      endTimeUnixNano: "1700000000010250000",
      attributes: [
        { key: "http.route", value: { stringValue: "/v1/subscriptions" } },
        { key: "http.response.status_code", value: { intValue: "200" } },
        { key: "ok", value: { boolValue: true } },
      ],
      status: { code: 0 },
    });
  });

  it("batches spans into POSTs with the configured headers and flushes on shutdown", async () => {
    const posts: Array<{ url: string; headers: Record<string, string>; body: ReturnType<typeof otlpTraceRequest> }> = [];
    const fakeFetch = (async (url: string, init: RequestInit) => {
      posts.push({ url, headers: init.headers as Record<string, string>, body: JSON.parse(String(init.body)) });
      return new Response("{}", { status: 200 });
    }) as unknown as typeof fetch;
    const exporter = createOtlpSpanExporter({
      url: "http://collector:4318/v1/traces",
      serviceName: "subdata-query",
      headers: { "x-api-key": "k" },
      logger,
      maxBatch: 2,
      fetch: fakeFetch,
    });
    for (const name of ["a", "b", "c"]) exporter.export(span(name));
    await exporter.shutdown();
    expect(posts.map((post) => post.body.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => s.name))).toEqual([["a", "b"], ["c"]]);
    expect(posts[0]!.url).toBe("http://collector:4318/v1/traces");
    expect(posts[0]!.headers).toMatchObject({ "content-type": "application/json", "x-api-key": "k" });
  });

  it("drops the spans of traces whose flags say not sampled", async () => {
    const names: string[] = [];
    const fakeFetch = (async (_url: string, init: RequestInit) => {
      const body = JSON.parse(String(init.body)) as ReturnType<typeof otlpTraceRequest>;
      names.push(...body.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => s.name));
      return new Response("{}", { status: 200 });
    }) as unknown as typeof fetch;
    const exporter = createOtlpSpanExporter({ url: "http://collector:4318/v1/traces", serviceName: "subdata-webhook", logger, fetch: fakeFetch });
    exporter.export({ ...span("unsampled"), sampled: false });
    exporter.export({ ...span("sampled"), sampled: true });
    exporter.export(span("unsaid"));
    await exporter.shutdown();
    expect(names).toEqual(["sampled", "unsaid"]);
  });

  it("never lets a failing collector reach the caller", async () => {
    const exporter = createOtlpSpanExporter({
      url: "http://collector:4318/v1/traces",
      serviceName: "x",
      logger,
      fetch: (async () => {
        throw new Error("ECONNREFUSED");
      }) as unknown as typeof fetch,
    });
    exporter.export(span("a"));
    await expect(exporter.shutdown()).resolves.toBeUndefined();
  });

  it("is configured by the standard OTEL_* variables, and off without them", async () => {
    expect(spanExporterFromEnv({}, "subdata-query", logger)).toBeUndefined();
    expect(spanExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" }, "s", logger)).toBeUndefined();
    const exporter = spanExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/" }, "subdata-query", logger);
    expect(exporter).toBeDefined();
    await exporter!.shutdown();
    expect(() => spanExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "s", logger)).toThrow(/http\/json/);
    expect(() => spanExporterFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }, "s", logger)).toThrow();
    expect(parseOtlpHeaders("api-key=a%20b, x-tenant = t1,broken")).toEqual({ "api-key": "a b", "x-tenant": "t1" });
  });
});
