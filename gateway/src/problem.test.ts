import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorReason, errorWithReason, invalidArgument, invalidPageToken, notFound, unavailable } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { problemBody, problemCatalogue, ProblemError, problemFromConnectError, wwwAuthenticate } from "./problem.ts";

describe("the ConnectError → problem table", () => {
  it.each([
    [errorWithReason("x", Code.Unauthenticated, ErrorReason.API_KEY_INVALID), "invalid_api_key"],
    [errorWithReason("x", Code.Unauthenticated, ErrorReason.API_KEY_REVOKED), "revoked_api_key"],
    [errorWithReason("x", Code.Unauthenticated, ErrorReason.API_KEY_EXPIRED), "expired_api_key"],
    [errorWithReason("x", Code.Unauthenticated, ErrorReason.SERVICE_CREDENTIAL_INVALID), "internal_error"],
    [invalidPageToken(), "invalid_cursor"],
    [invalidArgument("page_size", "too big"), "invalid_parameter"],
    [invalidArgument("merchant_id", "missing"), "internal_error"],
    [new ConnectError("no detail", Code.InvalidArgument), "internal_error"],
    [notFound("subscription"), "not_found"],
    [unavailable("db"), "unavailable"],
    [new ConnectError("slow", Code.DeadlineExceeded), "unavailable"],
    [new ConnectError("bug", Code.Internal), "internal_error"],
    [new ConnectError("?", Code.Unknown), "internal_error"],
  ])("%s → %s", (error, code) => {
    expect(problemFromConnectError(error, { page_size: "limit" }).code).toBe(code);
  });

  it("renames upstream fields to public parameters", () => {
    expect(problemFromConnectError(invalidArgument("page_size", "x"), { page_size: "limit" }).options.errors).toEqual([
      { param: "limit", code: "invalid_value" },
    ]);
  });

  it("renders RFC 9457 bodies with a stable type URI; errors[] only on 400", () => {
    expect(problemBody(new ProblemError("not_found"), "/api/v1/x", "req_1")).toEqual({
      type: "https://subdata.dev/problems/not_found",
      title: "Not found",
      status: 404,
      detail: "The requested resource does not exist.",
      instance: "/api/v1/x",
      code: "not_found",
      request_id: "req_1",
    });
    expect(problemBody(new ProblemError("invalid_cursor"), "/", "req_1").errors).toEqual([]);
  });

  it("challenges every 401 with Bearer, invalid_token only when a key was presented", () => {
    for (const [code, entry] of Object.entries(problemCatalogue)) {
      const challenge = wwwAuthenticate(code as keyof typeof problemCatalogue);
      expect(challenge !== undefined).toBe(entry.status === 401);
    }
    expect(wwwAuthenticate("missing_api_key")).not.toContain("error=");
    expect(wwwAuthenticate("revoked_api_key")).toContain('error="invalid_token"');
  });
});
