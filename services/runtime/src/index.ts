export { ConfigError, env, loadConfig, loadConfigOrExit } from "./config.ts";
export {
  createConnectServer,
  http2Settings,
  type ConnectObservability,
  type ConnectServer,
  type ConnectServerOptions,
} from "./connect-server.ts";
export { connectCodeName, errorDetailOf, errorWithReason, ErrorReason, invalidArgument, invalidPageToken, notFound, unavailable } from "./errors.ts";
export { requireNoNul, requireTimestampInRange } from "./postgres-fields.ts";
export { requireMerchantId } from "./merchant-id.ts";
export { createHealthService, createHealthState, type HealthState } from "./health.ts";
export { createLogger, redactedPaths, type Logger } from "./logger.ts";
export { createPageTokenCodec, type KeysetPosition, type PageTokenBinding, type PageTokenCodec } from "./page-token.ts";
export { cursorToPosition, positionToCursor, splitPage, type KeysetCursor } from "./keyset.ts";
export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, resolvePageSize } from "./page-size.ts";
export { createPool, type Pool, type PoolClient, type PoolOptions, type Queryable } from "./pg.ts";
export { requireServiceCredential, sendServiceCredential } from "./service-credential.ts";
export { createBackoff, sleep, type Backoff } from "./backoff.ts";
export { isIdWithPrefix, newId } from "./ids.ts";
export { handleShutdown, type ShutdownOptions } from "./shutdown.ts";
export {
  dateToTimestamp,
  pgTimestampToProto,
  pgTimestampToProtoOrUndefined,
  pgTimestampToRfc3339Millis,
  pgTimestampToRfc3339MillisOrNull,
  timestampToDate,
  timestampToPgText,
  timestampToRfc3339Millis,
} from "./time.ts";
export { createServiceTransport, type ServiceTransport, type ServiceTransportOptions } from "./transport.ts";
export { CONNECTION_WINDOW_SIZE, widenConnectionWindow } from "./http2-flow-control.ts";
export { formatMinorUnits, minorUnitDigits, renderMoney, type PublicMoney } from "./money.ts";
export {
  previousAttributes,
  renderCharge,
  renderOrder,
  renderSubscription,
  subscriptionStatusName,
  type PublicCharge,
  type PublicLineItem,
  type PublicOrder,
  type PublicSubscription,
} from "./public-objects.ts";
export {
  createMetrics,
  LATENCY_BUCKETS,
  registerPoolMetrics,
  rpcClientMetrics,
  rpcServerMetrics,
  startMetricsServer,
  Counter,
  Gauge,
  Histogram,
  Registry,
  type MetricsServer,
  type PoolStats,
} from "./metrics.ts";
export {
  acceptTraceContext,
  continueTrace,
  createTraceScope,
  formatTraceparent,
  isSampled,
  newSpanId,
  parseTraceparent,
  REQUEST_ID_HEADER,
  sendTraceContext,
  startTrace,
  traceHeaders,
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
  type TraceContext,
  type TraceScope,
} from "./trace-context.ts";
export { createProcessObservability, type ProcessObservability } from "./observability.ts";
export {
  createOtlpSpanExporter,
  otlpTraceRequest,
  parseOtlpHeaders,
  spanClockMs,
  spanExporterFromEnv,
  type OtlpExporterOptions,
  type SpanExporter,
  type SpanKind,
  type SpanRecord,
} from "./span-exporter.ts";
export { createUnaryTransport, type UnaryTransport, type UnaryTransportOptions } from "./unary-transport.ts";
export { createGroupCommitWriter, type GroupCommitOptions, type GroupCommitStats, type GroupCommitWriter, type ItemOutcomes } from "./group-commit.ts";
export { unnestColumns, type UnnestColumns } from "./unnest-columns.ts";
