import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { type AuditService, type RecordReadRequest, RecordReadRequestSchema } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import { createGroupCommitWriter, dateToTimestamp, type OverloadReason } from "@subdata/runtime";

/**
 * Records authenticated reads with AuditService.RecordReads, group-committed across requests: the
 * reads that arrive while one call is in flight go together in the next call, which starts as soon as
 * that one answered (no timer, so a lone read goes at once). Each request still waits until its own
 * read is durable: the gateway awaits the returned promise before sending the response, and a
 * rejection means the read must not be served (the caller answers 503).
 *
 * Bounded: when the auth service or its database is slow, reads do not pile up until the heap dies.
 * Past maxQueued waiting reads a read is refused at once, and a read not recorded within maxWaitMs is
 * refused then (AuditOverloadError): either way the caller answers 503 and sends no data.
 *
 * Why batch: one RPC per page cost the gateway and the auth service about a millisecond of CPU each
 * per request; one call per batch costs that once per batch (docs/benchmarks.md).
 */

export interface AuditEntry {
  merchantId: string;
  apiKeyId: string;
  requestId: string;
  receivedAtMs: number;
  method: string;
  /** Route template, e.g. "/v1/subscriptions/{id}". */
  route: string;
  /** Raw query string, without "?". */
  query: string;
  resourceIds: readonly string[];
  resultCount: number;
  status: number;
  clientIp: string;
  userAgent: string;
  latencyMs: number;
}

export type RecordAudit = (entry: AuditEntry) => Promise<void>;

/** Why a read could not be audited: its queue was full, it waited past its deadline, or the write failed. */
export type AuditRefusal = OverloadReason | "failed";

/** The rejection of a read refused by the recorder's bounds (never sent to the auth service). */
class AuditOverloadError extends Error {
  constructor(readonly reason: OverloadReason) {
    super(reason === "queue_full" ? "audit queue full" : "audit record not written in time");
    this.name = "AuditOverloadError";
  }
}

export function auditRefusalOf(error: unknown): AuditRefusal {
  return error instanceof AuditOverloadError ? error.reason : "failed";
}

export interface AuditRecorderDeps {
  audit: Client<typeof AuditService>;
  timeoutMs: number;
  /** Reads per RecordReads call at most (the auth service takes up to 1,000). Default 256. */
  maxBatchSize?: number;
  /** Called after every RecordReads call with its number of reads, for metrics. */
  onFlush?: (outcome: { size: number; ok: boolean }) => void;
  /** Reads waiting at most (besides the call in flight); beyond, a read is refused at once (SUBDATA_AUDIT_QUEUE_MAX). */
  maxQueued: number;
  /** A read not recorded within this is refused (SUBDATA_AUDIT_QUEUE_WAIT_MS). */
  maxWaitMs: number;
}

function readRequest(entry: AuditEntry): RecordReadRequest {
  const latencyNanos = BigInt(Math.max(0, Math.round(entry.latencyMs * 1e6)));
  return create(RecordReadRequestSchema, {
    merchantId: entry.merchantId,
    apiKeyId: entry.apiKeyId,
    requestId: entry.requestId,
    occurredAt: dateToTimestamp(new Date(entry.receivedAtMs)),
    method: entry.method,
    route: entry.route,
    query: entry.query,
    resourceIds: [...entry.resourceIds],
    resultCount: entry.resultCount,
    status: entry.status,
    clientIp: entry.clientIp,
    userAgent: entry.userAgent,
    latency: { seconds: latencyNanos / 1_000_000_000n, nanos: Number(latencyNanos % 1_000_000_000n) },
  });
}

export function createAuditRecorder(deps: AuditRecorderDeps): RecordAudit {
  // During a rolling upgrade the auth service may predate RecordReads: then each read goes alone, and
  // batches are tried again a minute later.
  let singleReadsUntil = 0;
  const oneByOne = (reads: readonly RecordReadRequest[]) =>
    Promise.all(
      reads.map((read) =>
        deps.audit.recordRead(read, { timeoutMs: deps.timeoutMs }).then(
          () => undefined,
          (error: unknown) => error,
        ),
      ),
    );
  const writer = createGroupCommitWriter<RecordReadRequest>({
    maxBatchSize: deps.maxBatchSize ?? 256,
    ...(deps.onFlush ? { onFlush: deps.onFlush } : {}),
    maxQueued: deps.maxQueued,
    maxWaitMs: deps.maxWaitMs,
    overloadedError: (reason) => new AuditOverloadError(reason),
    async flush(reads) {
      if (Date.now() < singleReadsUntil) return oneByOne(reads);
      // One call serves many requests; it carries the trace context of the request that started it.
      let response;
      try {
        response = await deps.audit.recordReads({ reads: [...reads] }, { timeoutMs: deps.timeoutMs });
      } catch (error) {
        if (ConnectError.from(error).code !== Code.Unimplemented) throw error;
        singleReadsUntil = Date.now() + 60_000;
        return oneByOne(reads);
      }
      if (response.results.length !== reads.length) {
        throw new ConnectError(`RecordReads answered ${response.results.length} results for ${reads.length} reads`, Code.Internal);
      }
      return response.results.map((result) =>
        result.outcome.case === "auditEventId"
          ? undefined
          : new ConnectError(`audit read refused: ${result.outcome.value ?? "no outcome"}`, Code.InvalidArgument),
      );
    },
  });
  return (entry) => writer.write(readRequest(entry));
}
