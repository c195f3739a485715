import { ConnectError } from "@connectrpc/connect";

/** For tests: the ConnectError a call failed with; fails the test if the call succeeded. */
export async function rpcError(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected the call to fail");
}

/** For tests: the ConnectError a synchronous check threw; fails the test if it threw nothing or something else. */
export function thrownConnectError(check: () => unknown): ConnectError {
  try {
    check();
  } catch (error) {
    if (error instanceof ConnectError) return error;
    throw error;
  }
  throw new Error("expected the check to throw");
}
