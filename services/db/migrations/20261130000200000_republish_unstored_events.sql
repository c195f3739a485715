-- Up Migration

-- When the event stream removed events (max_age) before the webhook consumer stored them, the consumer
-- hands them back to the relay: every change_events row committed before the stream's oldest message
-- that has no webhook_events row gets a pending event_outbox row again (a new one when the outbox's
-- retention already removed the published one). The relay publishes them as it does any pending row,
-- and ingest stores each event id once. The change feed keeps events far longer than the outbox and
-- the stream (400 days against 7), so whatever the stream lost is still here.
--
-- Clocks: `oldest_kept` is NATS's time, the outbox's published_at Postgres's; where they disagree, an
-- event still in the stream may be handed back too, which costs a duplicate publish and nothing else.
--
-- The window starts one day before the commit of the newest event the consumer stored (the stream
-- hands events out in publish order, so everything published before that one was stored; the day
-- covers publish order differing from commit order), or, with nothing stored yet, one day before what
-- the stream could have held (`stream_max_age` before its oldest message). At most `max_rows` per call,
-- oldest first; returns how many. SECURITY DEFINER: the webhook role may not write outbox rows itself.
CREATE FUNCTION subdata_republish_unstored_events(oldest_kept timestamptz, stream_max_age interval, max_rows integer)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  window_start timestamptz;
  handed_back integer;
BEGIN
  IF max_rows < 1 OR max_rows > 10000 THEN
    RAISE EXCEPTION 'max_rows must be between 1 and 10000, not %', max_rows;
  END IF;
  SELECT c.committed_at INTO window_start
    FROM webhook_events w
    JOIN change_events e ON e.id = w.id
    JOIN change_commits c ON c.xid = e.xid AND c.merchant_id = e.merchant_id
   ORDER BY w.received_at DESC, w.id DESC
   LIMIT 1;
  window_start := coalesce(window_start, oldest_kept - stream_max_age) - interval '1 day';

  WITH lost AS (
    SELECT e.id, e.merchant_id, e.resource_id
      FROM change_commits c
      JOIN change_events e ON e.xid = c.xid AND e.merchant_id = c.merchant_id
     WHERE c.committed_at >= window_start AND c.committed_at < oldest_kept
       AND NOT EXISTS (SELECT FROM webhook_events w WHERE w.id = e.id)
       -- Pending, or published since the stream's oldest message (so still in the stream): not lost.
       AND NOT EXISTS (SELECT FROM event_outbox o WHERE o.id = e.id AND (o.published_at IS NULL OR o.published_at >= oldest_kept))
     ORDER BY c.committed_at, c.position, e.seq
     LIMIT max_rows
  ), handed AS (
    INSERT INTO event_outbox (id, merchant_id, resource_id, last_error)
    SELECT id, merchant_id, resource_id, 'republished: the stream removed it before the webhook consumer stored it' FROM lost
    ON CONFLICT (id) DO UPDATE
      SET published_at = NULL, last_error = 'republished: the stream removed it before the webhook consumer stored it'
    RETURNING 1
  )
  SELECT count(*) INTO handed_back FROM handed;
  IF handed_back > 0 THEN
    PERFORM pg_notify('subdata_outbox', '');
  END IF;
  RETURN handed_back;
END
$$;
REVOKE ALL ON FUNCTION subdata_republish_unstored_events(timestamptz, interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION subdata_republish_unstored_events(timestamptz, interval, integer) TO subdata_webhook;

-- Down Migration

DROP FUNCTION subdata_republish_unstored_events(timestamptz, interval, integer);
