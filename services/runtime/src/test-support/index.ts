// Test helpers any workspace's tests may use; nothing in production imports them.
export { createCapturedLogger } from "./captured-logger.ts";
export { type CapturedSpan, createCapturedSpans } from "./captured-spans.ts";
export { rpcError } from "./rpc-error.ts";
export { type CallerTokens, createAllowedCallerTransport, createCallerTokens } from "./caller-tokens.ts";
