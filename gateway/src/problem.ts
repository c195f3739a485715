import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorReason, errorDetailOf } from "@subdata/runtime";

/**
 * RFC 9457 problem details, the gateway's only error shape, and the one table that maps upstream
 * ConnectErrors to HTTP. Details are written here, never copied from upstream messages, so no internal
 * text or stack ever reaches a client.
 */

export type ProblemCode =
  | "invalid_parameter"
  | "invalid_cursor"
  | "cursor_expired"
  | "missing_api_key"
  | "invalid_api_key"
  | "revoked_api_key"
  | "expired_api_key"
  | "not_found"
  | "method_not_allowed"
  | "rate_limited"
  | "unavailable"
  | "internal_error";

/** Stable, documented problem type URIs: identifiers first (clients compare them), docs/api.md explains each. */
const PROBLEM_TYPE_BASE = "https://subdata.dev/problems/";

export const problemCatalogue: Record<ProblemCode, { status: number; title: string; detail: string }> = {
  invalid_parameter: { status: 400, title: "Invalid parameter", detail: "One or more query parameters are invalid." },
  invalid_cursor: {
    status: 400,
    title: "Invalid cursor",
    detail: "The cursor is invalid, or was made for another list, filter or key.",
  },
  cursor_expired: {
    status: 410,
    title: "Cursor expired",
    detail: "Events after this cursor are past the feed's retention. Resynchronise: take cursor=head, copy the lists again, then follow from there.",
  },
  missing_api_key: { status: 401, title: "Missing API key", detail: "Send your API key as Authorization: Bearer <key>." },
  invalid_api_key: { status: 401, title: "Invalid API key", detail: "The API key is not valid." },
  revoked_api_key: { status: 401, title: "Revoked API key", detail: "The API key was revoked." },
  expired_api_key: { status: 401, title: "Expired API key", detail: "The API key has expired." },
  not_found: { status: 404, title: "Not found", detail: "The requested resource does not exist." },
  method_not_allowed: { status: 405, title: "Method not allowed", detail: "This resource only supports GET and HEAD." },
  rate_limited: { status: 429, title: "Rate limited", detail: "Too many requests for this API key; retry after the time given." },
  unavailable: { status: 503, title: "Service unavailable", detail: "A dependency is temporarily unavailable; retry later." },
  internal_error: { status: 500, title: "Internal error", detail: "An unexpected error occurred." },
};

/** One bad query parameter, by its public name. */
export interface ParamError {
  param: string;
  code: string;
}

/** Thrown anywhere in request handling; the error handler renders it. */
export class ProblemError extends Error {
  readonly status: number;
  constructor(
    readonly code: ProblemCode,
    readonly options: { detail?: string; errors?: ParamError[]; headers?: Record<string, string> } = {},
  ) {
    super(code);
    this.name = "ProblemError";
    this.status = problemCatalogue[code].status;
  }
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: ProblemCode;
  request_id: string;
  errors?: ParamError[];
}

export function problemBody(problem: ProblemError, instance: string, requestId: string): ProblemBody {
  const entry = problemCatalogue[problem.code];
  const body: ProblemBody = {
    type: PROBLEM_TYPE_BASE + problem.code,
    title: entry.title,
    status: entry.status,
    detail: problem.options.detail ?? entry.detail,
    instance,
    code: problem.code,
    request_id: requestId,
  };
  if (entry.status === 400) body.errors = problem.options.errors ?? [];
  return body;
}

/**
 * WWW-Authenticate for each 401 (RFC 6750 §3): no error code when no credentials were sent,
 * error="invalid_token" when a presented key is refused.
 */
export function wwwAuthenticate(code: ProblemCode): string | undefined {
  switch (code) {
    case "missing_api_key":
      return 'Bearer realm="subdata"';
    case "invalid_api_key":
      return 'Bearer realm="subdata", error="invalid_token", error_description="The API key is not valid"';
    case "revoked_api_key":
      return 'Bearer realm="subdata", error="invalid_token", error_description="The API key was revoked"';
    case "expired_api_key":
      return 'Bearer realm="subdata", error="invalid_token", error_description="The API key has expired"';
    default:
      return undefined;
  }
}

/** Upstream proto field names → public query/path parameter names, per route. */
export type FieldNames = Readonly<Record<string, string>>;

/**
 * THE table: ConnectError code + ErrorDetail reason → problem. Anything not listed is a 500 (the
 * caller logs the original). Service-credential failures are our misconfiguration, never the client's.
 */
export function problemFromConnectError(error: ConnectError, fieldNames: FieldNames = {}): ProblemError {
  const reason = errorDetailOf(error)?.reason ?? ErrorReason.UNSPECIFIED;
  switch (error.code) {
    case Code.Unauthenticated:
      if (reason === ErrorReason.API_KEY_INVALID) return new ProblemError("invalid_api_key");
      if (reason === ErrorReason.API_KEY_REVOKED) return new ProblemError("revoked_api_key");
      if (reason === ErrorReason.API_KEY_EXPIRED) return new ProblemError("expired_api_key");
      return new ProblemError("internal_error");
    case Code.InvalidArgument: {
      if (reason === ErrorReason.INVALID_PAGE_TOKEN) return new ProblemError("invalid_cursor");
      const violations = errorDetailOf(error)?.fieldViolations ?? [];
      const errors = violations.map((violation) => ({ param: fieldNames[violation.field], code: "invalid_value" }));
      // A violation of a field the client did not choose (merchant_id…) is our bug, not a 400.
      if (errors.length === 0 || errors.some((entry) => entry.param === undefined)) return new ProblemError("internal_error");
      return new ProblemError("invalid_parameter", { errors: errors as ParamError[] });
    }
    case Code.NotFound:
      return new ProblemError("not_found");
    case Code.FailedPrecondition:
      if (reason === ErrorReason.PAGE_TOKEN_EXPIRED) return new ProblemError("cursor_expired");
      return new ProblemError("internal_error");
    case Code.Unavailable:
    case Code.DeadlineExceeded:
    case Code.ResourceExhausted:
    case Code.Aborted:
      return new ProblemError("unavailable");
    default:
      return new ProblemError("internal_error");
  }
}

/** Any thrown value → the problem to answer with; `internal` says whether it deserves an error log. */
export function toProblem(error: unknown, fieldNames?: FieldNames): { problem: ProblemError; internal: boolean } {
  if (error instanceof ProblemError) return { problem: error, internal: error.code === "internal_error" };
  if (error instanceof ConnectError) {
    const problem = problemFromConnectError(error, fieldNames);
    return { problem, internal: problem.code === "internal_error" };
  }
  return { problem: new ProblemError("internal_error"), internal: true };
}
