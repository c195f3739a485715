-- Up Migration

-- The W3C trace context an event arrived with (the relay's traceparent on the JetStream message), so
-- every webhook POST of it, sent later by whichever worker claims it, can continue that trace: each
-- attempt sends a traceparent with this trace id and a span of its own (delivery-trace.ts). NULL when
-- the message had none or an invalid one, and for events written by SendTestEvent; their attempts start
-- a new trace. Stored only in the canonical version-00 form (55 characters), never tracestate or
-- anything else from the message.
--
-- Nullable without a default, so adding it rewrites nothing. The check is NOT VALID: every existing row
-- is NULL and satisfies it, and validating would only scan webhook_events under the ACCESS EXCLUSIVE
-- lock this statement holds (blocking ingest and claims). It is enforced for every row written from now on,
-- and left unvalidated on purpose: VALIDATE CONSTRAINT (a lighter lock) would only re-read NULLs.
ALTER TABLE webhook_events ADD COLUMN traceparent text;
ALTER TABLE webhook_events
  ADD CONSTRAINT webhook_events_traceparent_format
    CHECK (traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$') NOT VALID;

-- Down Migration

ALTER TABLE webhook_events DROP COLUMN traceparent;
