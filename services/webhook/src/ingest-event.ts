import { fromBinary } from "@bufbuild/protobuf";
import { SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import { type Logger, parseTraceparent, type Pool } from "@subdata/runtime";
import { ingestEvent } from "./delivery-repository.ts";
import { type RenderedEvent, renderEventBody } from "./event-body.ts";
import type { ConsumedMessage, MessageDisposition } from "./event-consumer.ts";

/**
 * Turns one consumed message into stored rows: decode, render the body once, store event and
 * deliveries. An undecodable event is poison (terminated, logged); a failure to store it is treated as
 * transient (redelivered later, in order), since losing an event is worse than waiting.
 */
export function createEventIngester(deps: {
  pool: Pool;
  logger: Logger;
  storeRetryMs: number;
  /** Called when deliveries were created, to start them without waiting for a poll. */
  onDeliveries: () => void;
}): (message: ConsumedMessage) => Promise<MessageDisposition> {
  return async (message) => {
    let event: RenderedEvent;
    try {
      event = renderEventBody(fromBinary(SubscriptionEventSchema, message.data));
    } catch (error) {
      return { kind: "term", reason: `undecodable subscription event: ${(error as Error).message}`.slice(0, 200) };
    }
    // The relay's trace id joins this event's log lines to the relay's.
    const traceId = parseTraceparent(message.traceparent)?.traceId;
    try {
      const created = await ingestEvent(deps.pool, event);
      if (created > 0) deps.onDeliveries();
      deps.logger.debug({ eventId: event.id, seq: message.seq, deliveries: created, traceId }, "event stored");
      return { kind: "ack" };
    } catch (error) {
      deps.logger.warn({ err: error, eventId: event.id, seq: message.seq, traceId }, "could not store event; it will be redelivered");
      return { kind: "nak", delayMs: deps.storeRetryMs };
    }
  };
}
