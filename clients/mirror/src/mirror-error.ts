import { CursorExpiredError, SubdataApiError, SubdataConnectionError } from "@subdata/client";

/**
 * A failure the user can act on, with a one-line message and a stable code: usage, config, api_key, api_unreachable,
 * api_error, cursor_expired, invalid_cursor, target_unreachable, target_schema, target, locked.
 */
export class MirrorError extends Error {
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "MirrorError";
  }
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

/** Postgres' connection-level failures (refused, unknown host, auth, unknown database). */
function isConnectionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    typeof code === "string" &&
    (["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH"].includes(code) || code.startsWith("28") || code === "3D000")
  );
}

/** The error as the user should read it: API and database failures named by what to do about them. */
export function toMirrorError(error: unknown, context: { apiUrl: string; target: string; apiKeyVariable: string }): MirrorError {
  if (error instanceof MirrorError) return error;
  if (error instanceof CursorExpiredError) {
    return new MirrorError(
      "the stored feed cursor has expired (it is older than the feed's retention), so the copy can no longer be brought up to date " +
        "from the feed: run again with --resync to copy everything anew",
      "cursor_expired",
      { cause: error },
    );
  }
  if (error instanceof SubdataApiError) {
    if (error.status === 401) {
      return new MirrorError(`the API refused the key in ${context.apiKeyVariable} (${error.code}): check the key`, "api_key", { cause: error });
    }
    if (error.code === "invalid_cursor") {
      return new MirrorError(
        "the API refused the cursor stored in sync_state (invalid_cursor): this schema was filled through another merchant's key or " +
          "another deployment; use the same key, another --schema, or --resync",
        "invalid_cursor",
        { cause: error },
      );
    }
    return new MirrorError(oneLine(`the API at ${context.apiUrl} failed: ${error.message}`), "api_error", { cause: error });
  }
  if (error instanceof SubdataConnectionError) return new MirrorError(oneLine(error.message), "api_unreachable", { cause: error });
  if (isConnectionFailure(error)) {
    const message = error instanceof Error ? error.message : String(error);
    return new MirrorError(oneLine(`could not connect to the target database ${context.target}: ${message}`), "target_unreachable", { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new MirrorError(oneLine(`the mirror failed: ${message}`), "target", { cause: error });
}

/** A postgres URL with its password replaced, for messages. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(invalid URL)";
  }
}
