import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { normaliseErrors } from "./connect-server.ts";
import { createCapturedLogger } from "./test-support/captured-logger.ts";

/** What a handler's error becomes at the service edge. */
async function codeOf(thrown: unknown): Promise<{ code: Code; message: string }> {
  const { logger } = createCapturedLogger({ name: "test", level: "silent" });
  const handler = normaliseErrors(logger)(async () => {
    throw thrown;
  });
  try {
    await handler({ method: { name: "DeleteEndpoint" } } as never);
  } catch (error) {
    const connectError = ConnectError.from(error);
    return { code: connectError.code, message: connectError.rawMessage };
  }
  throw new Error("the handler did not throw");
}

const pgError = (code: string) => Object.assign(new Error("pg says no"), { code });

describe("normaliseErrors", () => {
  it("keeps a deliberate ConnectError as it is", async () => {
    expect(await codeOf(new ConnectError("no such endpoint", Code.NotFound))).toEqual({ code: Code.NotFound, message: "no such endpoint" });
  });

  it("answers a lost race (deadlock, serialization failure) ABORTED, so the caller knows a retry may succeed", async () => {
    for (const code of ["40P01", "40001"]) expect((await codeOf(pgError(code))).code).toBe(Code.Aborted);
  });

  it("answers a statement timeout DEADLINE_EXCEEDED and a lost connection UNAVAILABLE", async () => {
    expect((await codeOf(pgError("57014"))).code).toBe(Code.DeadlineExceeded);
    expect((await codeOf(pgError("08006"))).code).toBe(Code.Unavailable);
    expect((await codeOf(new Error("Connection terminated unexpectedly"))).code).toBe(Code.Unavailable);
  });

  it("answers anything else INTERNAL without its message", async () => {
    expect(await codeOf(pgError("23505"))).toEqual({ code: Code.Internal, message: "internal error" });
  });
});
