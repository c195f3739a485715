import type { KeyObject } from "node:crypto";
import { parseRetryAfter } from "./retry-schedule.ts";
import type { SafeHttpClient, TransportErrorClass } from "./safe-http-client.ts";
import { signatureHeader } from "./sign-webhook.ts";

/**
 * One delivery attempt: sign the stored body for this attempt's timestamp and POST it. Returns what
 * happened, for the attempt log and the retry decision; throws only for bugs.
 */

/** subdata.webhook.v1.AttemptErrorClass names, as stored in webhook_attempts.error_class. */
export type AttemptErrorClass = "NONE" | "HTTP_STATUS" | TransportErrorClass;

/** The first 20 KB of a response body are kept in the attempt log. */
export const RESPONSE_BODY_LOG_BYTES = 20 * 1024;

const USER_AGENT = "subdata-webhooks/1.0 (+https://www.standardwebhooks.com/)";

export interface WebhookMessage {
  /** evt_…: the webhook-id, the same on every retry, resend and replay. */
  eventId: string;
  url: string;
  /** The exact stored JSON text. */
  body: string;
  /** The keys of the valid signing secrets (sign-webhook.ts signingKey), newest first. */
  signingKeys: readonly KeyObject[];
  /**
   * This attempt's W3C traceparent (delivery-trace.ts): the event's trace, this attempt's span. Sent as
   * is so receivers can join our trace; tracestate and other internal context are never sent.
   */
  traceparent: string;
}

export interface AttemptResult {
  startedAt: Date;
  latencyMicros: bigint;
  /** Null when no HTTP response arrived. */
  status: number | null;
  errorClass: AttemptErrorClass;
  responseBody: string;
  /** Retry-After of a 429/5xx, in ms from the attempt's start, when usable. */
  retryAfterMs: number | undefined;
  /** Transport error detail for logs (never contains secrets). */
  errorMessage: string | undefined;
}

export interface Clock {
  now(): Date;
}

export interface WebhookSender {
  send(message: WebhookMessage): Promise<AttemptResult>;
}

export function createWebhookSender(deps: { http: SafeHttpClient; clock: Clock }): WebhookSender {
  const decoder = new TextDecoder("utf-8");
  return {
    async send(message) {
      const startedAt = deps.clock.now();
      const timestamp = Math.floor(startedAt.getTime() / 1000);
      const headers = {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": message.eventId,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signatureHeader(message.signingKeys, message.eventId, timestamp, message.body),
        traceparent: message.traceparent,
      };
      const started = process.hrtime.bigint();
      const outcome = await deps.http.post(message.url, headers, message.body);
      const latencyMicros = (process.hrtime.bigint() - started) / 1000n;
      if (outcome.kind === "error") {
        return {
          startedAt,
          latencyMicros,
          status: null,
          errorClass: outcome.errorClass,
          responseBody: "",
          retryAfterMs: undefined,
          errorMessage: outcome.message,
        };
      }
      const success = outcome.status >= 200 && outcome.status < 300;
      const honoursRetryAfter = outcome.status === 429 || outcome.status >= 500;
      return {
        startedAt,
        latencyMicros,
        status: outcome.status,
        errorClass: success ? "NONE" : "HTTP_STATUS",
        // Postgres text cannot hold NUL; a binary body is kept as lossy text.
        responseBody: decoder.decode(outcome.body.subarray(0, RESPONSE_BODY_LOG_BYTES)).replaceAll("\u0000", ""),
        retryAfterMs: honoursRetryAfter ? parseRetryAfter(outcome.retryAfter, startedAt) : undefined,
        errorMessage: undefined,
      };
    },
  };
}
