import { type ChangeEventRow, changeEventFromRow, resourceTypeOfSubject } from "@subdata/events";
import { type RenderedEvent, renderedEvent } from "./event-message.ts";

/**
 * Whether a consumed event is the change_events row it claims to be. Anyone who can publish on the
 * events' subjects could otherwise have any merchant's endpoints receive any body, signed with that
 * merchant's real secret. The row is the truth: it was written in the transaction that made the change,
 * and the relay publishes exactly what @subdata/events renders from it. So an event is accepted only
 * if a row with its id exists, the subject names the row's resource kind and merchant, and the message
 * renders to the same merchant, resource, type, version, time and body as the row does.
 */

/** Why an event was refused: the metric's `reason` label (a small, fixed set). */
export type RefusalReason = "undecodable" | "unknown_event" | "subject" | "merchant" | "resource" | "type" | "version" | "body";

export type Provenance = { genuine: true; event: RenderedEvent } | { genuine: false; reason: RefusalReason };

/** The event's merchant token of a subject `<prefix>.<resource>.<merchant_id>`. */
function merchantOfSubject(subject: string): string | undefined {
  return subject.slice(subject.lastIndexOf(".") + 1);
}

/**
 * Compares a consumed event (its subject and what it rendered to) with the change_events row of its id
 * (undefined when there is none). The accepted event is the one rendered from the row.
 */
export function checkProvenance(subject: string, claimed: RenderedEvent, row: ChangeEventRow | undefined): Provenance {
  if (!row) return { genuine: false, reason: "unknown_event" };
  if (resourceTypeOfSubject(subject) !== row.resource_type || merchantOfSubject(subject) !== row.merchant_id) return { genuine: false, reason: "subject" };
  if (claimed.merchantId !== row.merchant_id) return { genuine: false, reason: "merchant" };
  if (claimed.resourceId !== row.resource_id) return { genuine: false, reason: "resource" };
  if (claimed.type !== row.event_type) return { genuine: false, reason: "type" };
  if (claimed.version !== row.version) return { genuine: false, reason: "version" };
  let recorded: RenderedEvent;
  try {
    recorded = renderedEvent(changeEventFromRow(row));
  } catch {
    // A row the renderer cannot represent was never published by the relay either.
    return { genuine: false, reason: "body" };
  }
  if (claimed.occurredAtExact !== recorded.occurredAtExact || claimed.body !== recorded.body) return { genuine: false, reason: "body" };
  return { genuine: true, event: recorded };
}
