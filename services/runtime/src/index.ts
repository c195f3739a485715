export { ConfigError, env, loadConfig, loadConfigOrExit, placeholderProblem } from "./config.ts";
export { natsCredentialShape, natsCredentials, type NatsCredentials } from "./nats-credentials.ts";
export {
  createConnectServer,
  type ConnectObservability,
  type ConnectServer,
} from "./connect-server.ts";
export { errorDetailOf, errorWithReason, ErrorReason, invalidArgument, invalidPageToken, notFound, unavailable } from "./errors.ts";
export { requireNoNul, requireTimestampInRange } from "./postgres-fields.ts";
export { requireMerchantId } from "./merchant-id.ts";
export { createHealthState, type HealthState, healthConfigShape } from "./health.ts";
export { createLogger, type Logger } from "./logger.ts";
export { createPageTokenCodec, type KeysetPosition, type PageTokenBinding, type PageTokenCodec } from "./page-token.ts";
export { cursorToPosition, positionToCursor, splitPage, type KeysetCursor } from "./keyset.ts";
export { MAX_PAGE_SIZE, resolvePageSize } from "./page-size.ts";
export { CONNECTION_LIVENESS, connectionConfig, createPool, type Pool, type PoolClient, type Queryable } from "./pg.ts";
export { createBackoff, sleep } from "./backoff.ts";
export { isIdWithPrefix, newId } from "./ids.ts";
export { handleShutdown } from "./shutdown.ts";
export {
  dateToTimestamp,
  pgJsonTimestampToProto,
  pgTimestampToProto,
  pgTimestampToProtoOrUndefined,
  pgTimestampToRfc3339Millis,
  pgTimestampToRfc3339MillisOrNull,
  timestampToDate,
  timestampToPgText,
  timestampToRfc3339Millis,
} from "./time.ts";
export { createServiceTransport } from "./transport.ts";
export { callerCredentialsFrom, type CallerCredentials, tokenSha256 } from "./service-credential.ts";
export { type Caller, CALLERS, callerHashVariable, callerTokenVariable, RPC_ACCESS, renderRpcAccessTable } from "./rpc-access.ts";
export { formatMinorUnits, minorUnitDigits } from "./money.ts";
export { PUBLIC_LIST_START, publicFeedEnd, publicListEnd } from "./public-list.ts";
export {
  previousAttributes,
  renderCharge,
  renderOrder,
  renderSubscription,
} from "./public-objects.ts";
export {
  createMetrics,
  LATENCY_BUCKETS,
  rpcClientMetrics,
  startMetricsServer,
  Counter,
  Gauge,
  Histogram,
  Registry,
} from "./metrics.ts";
export { createTraceScope, sendTraceContext, type TraceScope } from "./trace-context.ts";
export { createProcessObservability } from "./observability.ts";
export { spanExporterFromEnv, type Tracing, tracingFromEnv } from "./tracing.ts";
export { createGroupCommitWriter, type GroupCommitStats, type OverloadReason } from "./group-commit.ts";
export { unnestColumns } from "./unnest-columns.ts";
export { createPgListener } from "./pg-listener.ts";
