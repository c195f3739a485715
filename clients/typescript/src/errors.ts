import type { components } from "./generated/schema.ts";

/** The RFC 9457 problem every error response carries (400s add `errors`). */
export type Problem = components["schemas"]["Problem"] & { errors?: components["schemas"]["ParamError"][] };

/**
 * The API answered with an error it will answer again if asked the same way: a 4xx other than 429, or a
 * 429/5xx that outlasted the retries. Carries the problem document as sent.
 */
export class SubdataApiError extends Error {
  readonly status: number;
  /** The problem's `code` (e.g. invalid_api_key, invalid_cursor); "unknown" when the body was not a problem. */
  readonly code: string;
  /** The Request-Id of the failed request: quote it to support. */
  readonly requestId: string | undefined;
  readonly problem: Problem | undefined;

  constructor(status: number, problem: Problem | undefined, requestId: string | undefined) {
    const code = problem?.code ?? "unknown";
    super(`subdata API answered ${status} ${code}${problem?.detail ? `: ${problem.detail}` : ""}${requestId ? ` (request ${requestId})` : ""}`);
    this.name = "SubdataApiError";
    this.status = status;
    this.code = code;
    this.requestId = requestId ?? problem?.request_id;
    this.problem = problem;
  }
}

/**
 * 410 cursor_expired: the feed no longer holds the events after this cursor (retention). Nothing can be
 * resumed from it; resynchronise: take cursor=head, walk the lists again, follow from that head.
 */
export class CursorExpiredError extends SubdataApiError {
  constructor(status: number, problem: Problem | undefined, requestId: string | undefined) {
    super(status, problem, requestId);
    this.name = "CursorExpiredError";
  }
}

/** The API could not be reached (connection refused, reset, DNS, TLS) on any attempt. */
export class SubdataConnectionError extends Error {
  constructor(
    readonly url: string,
    options: { cause: unknown },
  ) {
    const cause = options.cause;
    const reason = cause instanceof Error ? describeNetworkError(cause) : String(cause);
    super(`could not reach the subdata API at ${url}: ${reason}`, options);
    this.name = "SubdataConnectionError";
  }
}

/** Node's fetch says "fetch failed" and puts the reason (ECONNREFUSED …) in `cause`. */
function describeNetworkError(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === "string" ? `${code} (${cause.message})` : cause.message;
  }
  return error.message;
}

export function errorFor(status: number, body: unknown, requestId: string | undefined): SubdataApiError {
  const problem = isProblem(body) ? body : undefined;
  if (status === 410 && problem?.code === "cursor_expired") return new CursorExpiredError(status, problem, requestId);
  return new SubdataApiError(status, problem, requestId);
}

function isProblem(body: unknown): body is Problem {
  return typeof body === "object" && body !== null && typeof (body as { code?: unknown }).code === "string";
}
