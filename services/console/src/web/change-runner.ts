import type { ChangeRepository, ChangeRow } from "../change-repository.ts";
import type { SessionContext } from "./console-context.ts";
import { FormError, pageErrorOf } from "./page-error.ts";

export type ChangeOutcome<T> = { kind: "done"; value: T } | { kind: "repeated"; change: ChangeRow };

export interface ChangeRequest {
  /** e.g. "api_key.create". */
  action: string;
  /** What is changed, when known before (a key to revoke). */
  targetId: string | null;
  /** The form's _idem field. */
  idempotencyKey: unknown;
}

export interface ChangeResult<T> {
  value: T;
  targetId: string | null;
  detail?: string;
}

const IDEMPOTENCY_KEY = /^[A-Za-z0-9_-]{16,64}$/;

/**
 * Runs one change made in the page, recorded in console_changes with the session and its user. The row is
 * written first, keyed by the form's idempotency key: the same form sent again (a reload of the result,
 * a second click) finds it and is not applied twice. A failure is recorded too, then rethrown.
 */
export async function runChange<T>(
  changes: ChangeRepository,
  context: SessionContext,
  request: ChangeRequest,
  perform: () => Promise<ChangeResult<T>>,
): Promise<ChangeOutcome<T>> {
  if (typeof request.idempotencyKey !== "string" || !IDEMPOTENCY_KEY.test(request.idempotencyKey)) {
    throw new FormError("The form is missing its idempotency key; reload the page and try again.");
  }
  const begun = await changes.begin(context.session, request.action, request.targetId, request.idempotencyKey);
  if (!begun) {
    const change = await changes.find(context.session.id, request.idempotencyKey);
    if (!change) throw new Error("console change vanished between insert and read");
    return { kind: "repeated", change };
  }
  try {
    const result = await perform();
    await changes.finish(begun.id, { status: "succeeded", targetId: result.targetId, detail: result.detail ?? "" });
    return { kind: "done", value: result.value };
  } catch (error) {
    const shown = pageErrorOf(error) ?? (error instanceof FormError ? error : undefined);
    await changes.finish(begun.id, { status: "failed", targetId: null, detail: shown ? shown.message : "internal error" });
    throw error;
  }
}

/** The sentence shown when a form arrives again after its change was made (or tried). */
export function repeatedChangeText(change: ChangeRow): string {
  switch (change.status) {
    case "succeeded":
      return `This was already done${change.target_id ? ` (${change.target_id})` : ""}; it was not done again.`;
    case "failed":
      return `This was tried already and failed: ${change.detail}`;
    default:
      return "This change is being made or its outcome is not known yet; check the list below before trying again.";
  }
}
