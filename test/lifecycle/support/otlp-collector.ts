import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** A stub OTLP/HTTP JSON collector on 127.0.0.1 that keeps every span the processes export. */

export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP SpanKind: 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  /** The exporting process's service.name. */
  service: string;
  /** String, int (as text) and bool attribute values. */
  attributes: Record<string, string | boolean>;
  status: { code: number };
}

interface OtlpValue {
  stringValue?: string;
  /** A string in the JSON mapping; some encoders write a number. */
  intValue?: string | number;
  boolValue?: boolean;
}

interface OtlpBody {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: OtlpValue }> };
    scopeSpans: Array<{ spans: Array<Omit<CollectedSpan, "service" | "attributes"> & { attributes: Array<{ key: string; value: OtlpValue }> }> }>;
  }>;
}

const plain = (value: OtlpValue) => value.stringValue ?? (value.intValue === undefined ? undefined : String(value.intValue)) ?? value.boolValue ?? "";

export async function startCollector(): Promise<{ url: string; spans: CollectedSpan[]; close(): Promise<void> }> {
  const spans: CollectedSpan[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpBody;
      for (const resource of body.resourceSpans) {
        const service = String(plain(resource.resource.attributes.find((a) => a.key === "service.name")?.value ?? {}));
        for (const scope of resource.scopeSpans) {
          for (const span of scope.spans) {
            spans.push({ ...span, service, attributes: Object.fromEntries(span.attributes.map((a) => [a.key, plain(a.value)])) });
          }
        }
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
