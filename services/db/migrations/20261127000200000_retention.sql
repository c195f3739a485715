-- Up Migration

-- Retention of the webhook tables, and what `subdata maintain` reports about every growing table.
-- Each purge is a SECURITY DEFINER function with a floor, like the security log's and the outbox's: the
-- maintenance role (subdata_maintain) can call it but holds no DELETE, so it can remove only what is
-- old enough, in bounded batches (short transactions; SKIP LOCKED lets two runs overlap).
--
-- Each purge walks an index on its time column, oldest first. On a large existing installation these
-- index builds lock the table against writes while they run: create them first by hand with CREATE
-- INDEX CONCURRENTLY under the same names, and this migration skips them (IF NOT EXISTS).
CREATE INDEX IF NOT EXISTS webhook_deliveries_created ON webhook_deliveries (created_at, id);
CREATE INDEX IF NOT EXISTS webhook_attempts_started ON webhook_attempts (started_at, id);
CREATE INDEX IF NOT EXISTS webhook_events_received ON webhook_events (received_at, id);
-- An event can go only once no delivery refers to it: this is that lookup, and the one the foreign
-- key makes on every delete of an event (without it, a sequential scan of the deliveries per event).
CREATE INDEX IF NOT EXISTS webhook_deliveries_event ON webhook_deliveries (event_id);

-- Deliveries created more than `retention` ago and finished (not PENDING), with their attempts (ON
-- DELETE CASCADE); one resent and still pending goes once it is finished. Never less than 7 days:
-- retries run for about 3.5 days and an endpoint is disabled after 5 days without a success, so a
-- younger delivery may still matter.
CREATE FUNCTION subdata_purge_webhook_deliveries(retention interval, max_rows integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  purged integer;
BEGIN
  IF retention IS NULL OR retention < interval '7 days' THEN
    RAISE EXCEPTION 'webhook deliveries are kept at least 7 days, got %', retention USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF max_rows < 1 OR max_rows > 100000 THEN
    RAISE EXCEPTION 'max_rows must be 1..100000, got %', max_rows USING ERRCODE = 'invalid_parameter_value';
  END IF;
  WITH doomed AS (
    SELECT id FROM webhook_deliveries
     WHERE created_at < clock_timestamp() - retention
       AND status <> 'PENDING'
     ORDER BY created_at, id
     LIMIT max_rows
       FOR UPDATE SKIP LOCKED
  )
  DELETE FROM webhook_deliveries d USING doomed x WHERE d.id = x.id;
  GET DIAGNOSTICS purged = ROW_COUNT;
  RETURN purged;
END
$$;
REVOKE ALL ON FUNCTION subdata_purge_webhook_deliveries(interval, integer) FROM PUBLIC;

-- Attempts older than `retention`, also those of a delivery that stays (one resent many times over
-- months keeps only its recent attempts). Same floor as deliveries.
CREATE FUNCTION subdata_purge_webhook_attempts(retention interval, max_rows integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  purged integer;
BEGIN
  IF retention IS NULL OR retention < interval '7 days' THEN
    RAISE EXCEPTION 'webhook attempts are kept at least 7 days, got %', retention USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF max_rows < 1 OR max_rows > 100000 THEN
    RAISE EXCEPTION 'max_rows must be 1..100000, got %', max_rows USING ERRCODE = 'invalid_parameter_value';
  END IF;
  WITH doomed AS (
    SELECT id FROM webhook_attempts
     WHERE started_at < clock_timestamp() - retention
     ORDER BY started_at, id
     LIMIT max_rows
       FOR UPDATE SKIP LOCKED
  )
  DELETE FROM webhook_attempts a USING doomed x WHERE a.id = x.id;
  GET DIAGNOSTICS purged = ROW_COUNT;
  RETURN purged;
END
$$;
REVOKE ALL ON FUNCTION subdata_purge_webhook_attempts(interval, integer) FROM PUBLIC;

-- Events received more than `retention` ago that no delivery refers to any more. ReplayEvents
-- schedules from these rows, so they are kept at least as long as the change feed keeps its events
-- (the maintenance task checks that); never less than 30 days.
CREATE FUNCTION subdata_purge_webhook_events(retention interval, max_rows integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  purged integer;
BEGIN
  IF retention IS NULL OR retention < interval '30 days' THEN
    RAISE EXCEPTION 'webhook events are kept at least 30 days, got %', retention USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF max_rows < 1 OR max_rows > 100000 THEN
    RAISE EXCEPTION 'max_rows must be 1..100000, got %', max_rows USING ERRCODE = 'invalid_parameter_value';
  END IF;
  WITH doomed AS (
    SELECT e.id FROM webhook_events e
     WHERE e.received_at < clock_timestamp() - retention
       AND NOT EXISTS (SELECT FROM webhook_deliveries d WHERE d.event_id = e.id)
     ORDER BY e.received_at, e.id
     LIMIT max_rows
       FOR UPDATE SKIP LOCKED
  )
  DELETE FROM webhook_events e USING doomed x WHERE e.id = x.id;
  GET DIAGNOSTICS purged = ROW_COUNT;
  RETURN purged;
END
$$;
REVOKE ALL ON FUNCTION subdata_purge_webhook_events(interval, integer) FROM PUBLIC;

-- Each growing table's oldest row (by the column its retention goes by), row estimate and size on
-- disk, without a scan: min() walks the time index, the rest is catalog. For the maintenance role,
-- which may read none of these tables. The outbox counts published rows only (pending ones are the
-- relay's lag, reported by the relay).
CREATE FUNCTION subdata_retention_status()
RETURNS TABLE (table_name text, oldest timestamptz, approx_rows bigint, bytes bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH sizes AS (
    SELECT coalesce(parent.relname, c.relname)::text AS table_name,
           sum(greatest(c.reltuples, 0))::bigint AS approx_rows,
           sum(pg_total_relation_size(c.oid))::bigint AS bytes
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
      LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
      LEFT JOIN pg_class parent ON parent.oid = i.inhparent
     WHERE c.relkind = 'r'
       AND coalesce(parent.relname, c.relname) IN ('audit_events', 'security_events', 'webhook_events', 'webhook_deliveries',
                                                   'webhook_attempts', 'event_outbox', 'change_events', 'change_commits')
     GROUP BY 1
  ), oldest AS (
    SELECT 'audit_events' AS table_name, (SELECT min(occurred_at) FROM audit_events) AS oldest
    UNION ALL SELECT 'security_events', (SELECT min(occurred_at) FROM security_events)
    UNION ALL SELECT 'webhook_events', (SELECT min(received_at) FROM webhook_events)
    UNION ALL SELECT 'webhook_deliveries', (SELECT min(created_at) FROM webhook_deliveries)
    UNION ALL SELECT 'webhook_attempts', (SELECT min(started_at) FROM webhook_attempts)
    UNION ALL SELECT 'event_outbox', (SELECT min(published_at) FROM event_outbox WHERE published_at IS NOT NULL)
    UNION ALL SELECT 'change_commits', (SELECT min(committed_at) FROM change_commits)
    UNION ALL SELECT 'change_events', (SELECT min(committed_at) FROM change_commits)
  )
  SELECT o.table_name, o.oldest, coalesce(s.approx_rows, 0), coalesce(s.bytes, 0)
    FROM oldest o LEFT JOIN sizes s USING (table_name)
   ORDER BY o.table_name;
END
$$;
REVOKE ALL ON FUNCTION subdata_retention_status() FROM PUBLIC;

-- The audit partitions with their bounds, the planner's row estimate and size on disk; for the default
-- partition, which should be empty, the exact count up to a million.
CREATE FUNCTION subdata_audit_partition_status()
RETURNS TABLE (partition_name text, range_start timestamptz, range_end timestamptz, is_default boolean, approx_rows bigint, bytes bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
  SELECT p.partition_name, p.range_start, p.range_end, p.is_default,
         CASE WHEN p.is_default THEN (SELECT count(*) FROM (SELECT FROM public.audit_events_default LIMIT 1000000) d)
              ELSE greatest(c.reltuples, 0)::bigint END,
         pg_total_relation_size(c.oid)
    FROM subdata_audit_partitions() p
    JOIN pg_class c ON c.oid = format('public.%I', p.partition_name)::regclass
$$;
REVOKE ALL ON FUNCTION subdata_audit_partition_status() FROM PUBLIC;

GRANT EXECUTE ON FUNCTION subdata_audit_partition_status() TO subdata_maintain;
GRANT EXECUTE ON FUNCTION subdata_purge_webhook_deliveries(interval, integer) TO subdata_maintain;
GRANT EXECUTE ON FUNCTION subdata_purge_webhook_attempts(interval, integer) TO subdata_maintain;
GRANT EXECUTE ON FUNCTION subdata_purge_webhook_events(interval, integer) TO subdata_maintain;
GRANT EXECUTE ON FUNCTION subdata_retention_status() TO subdata_maintain;

-- Down Migration

DROP FUNCTION subdata_audit_partition_status();
DROP FUNCTION subdata_retention_status();
DROP FUNCTION subdata_purge_webhook_events(interval, integer);
DROP FUNCTION subdata_purge_webhook_attempts(interval, integer);
DROP FUNCTION subdata_purge_webhook_deliveries(interval, integer);
DROP INDEX webhook_deliveries_event;
DROP INDEX webhook_events_received;
DROP INDEX webhook_attempts_started;
DROP INDEX webhook_deliveries_created;
