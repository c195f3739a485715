import { Code, ConnectError } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type ErrorDetail, ErrorDetailSchema, ErrorReason } from "@subdata/proto/subdata/common/v1/error_detail_pb";

export { ErrorReason };

function withDetail(message: string, code: Code, detail: MessageInitShape<typeof ErrorDetailSchema>): ConnectError {
  return new ConnectError(message, code, undefined, [{ desc: ErrorDetailSchema, value: detail }]);
}

/** A request field is missing or wrong. `field` is the proto field name. */
export function invalidArgument(field: string, description: string): ConnectError {
  return withDetail(`${field}: ${description}`, Code.InvalidArgument, {
    reason: ErrorReason.INVALID_ARGUMENT,
    fieldViolations: [{ field, description }],
  });
}

/** The page token is not one this service made for this method, merchant and filter. */
export function invalidPageToken(): ConnectError {
  return withDetail("page_token is invalid, or was made for another method, merchant or filter", Code.InvalidArgument, {
    reason: ErrorReason.INVALID_PAGE_TOKEN,
    fieldViolations: [{ field: "page_token", description: "invalid page token" }],
  });
}

/** Unknown, or another merchant's: the two must be indistinguishable. */
export function notFound(what: string): ConnectError {
  return withDetail(`${what} not found`, Code.NotFound, { reason: ErrorReason.NOT_FOUND });
}

/** A dependency is down; the caller may retry. */
export function unavailable(what: string): ConnectError {
  return withDetail(`${what} is unavailable`, Code.Unavailable, { reason: ErrorReason.DEPENDENCY_UNAVAILABLE });
}

/** A ConnectError with an explicit reason, for errors the helpers above do not cover. */
export function errorWithReason(message: string, code: Code, reason: ErrorReason): ConnectError {
  return withDetail(message, code, { reason });
}

/** The ErrorDetail a subdata service attached to an error, if any. */
export function errorDetailOf(error: ConnectError): ErrorDetail | undefined {
  return error.findDetails(ErrorDetailSchema)[0];
}

/** A code's name as the Connect protocol writes it: "not_found", "unavailable", … (for metrics and spans). */
export function connectCodeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}
