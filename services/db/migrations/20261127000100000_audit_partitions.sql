-- Up Migration

-- The audit log, partitioned by month of occurred_at. Every read writes a row and nothing else removes
-- one, so the table only grows; a month is removed whole, by dropping its partition once it is older
-- than the retention (`subdata maintain`, SUBDATA_AUDIT_RETENTION_DAYS, never under 30 days). A drop
-- removes a file: it costs the same for a month of 10 rows or 10 billion, and leaves no dead rows to
-- vacuum. Rows still never change: UPDATE, DELETE and TRUNCATE raise for everyone, on the table and
-- on each partition, and no service role holds any privilege on a partition.
--
-- Who may do what:
--   subdata_auth      SELECT, INSERT on audit_events (the parent); nothing on partitions.
--   subdata_maintain  EXECUTE on the partition functions below; no privilege on any table of data.
--   the owner         (the migrating user) owns the partitions; the functions run as it.

SET LOCAL TimeZone = 'UTC';

DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'subdata_maintain') THEN
    CREATE ROLE subdata_maintain LOGIN;
  END IF;
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO subdata_maintain', current_database());
END
$$;
GRANT USAGE ON SCHEMA public TO subdata_maintain;

-- Every partition created, drained, detached or dropped, by whom and when: what left the audit log, and how
-- much, is itself on record. Append-only like the log it describes.
CREATE TABLE audit_partition_log (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at             timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- created | detached (past retention, out of audit_events) | dropped | drained (rows of the default
  -- partition moved into their month's partition)
  action         text NOT NULL CHECK (action IN ('created', 'detached', 'dropped', 'drained')),
  partition_name text NOT NULL,
  -- NULL: unbounded (the partition that holds the rows from before partitioning).
  range_start    timestamptz,
  range_end      timestamptz,
  -- detached, dropped: the planner's estimate (pg_class.reltuples) and the size on disk, both read
  -- without a scan; drained: the exact number of rows moved.
  rows           bigint,
  bytes          bigint,
  done_by        text NOT NULL DEFAULT session_user
);
CREATE FUNCTION audit_partition_log_refuse_change() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  RAISE EXCEPTION 'audit_partition_log is append-only: % is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_partition_log_no_update_delete
  BEFORE UPDATE OR DELETE ON audit_partition_log
  FOR EACH ROW EXECUTE FUNCTION audit_partition_log_refuse_change();
CREATE TRIGGER audit_partition_log_no_truncate
  BEFORE TRUNCATE ON audit_partition_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_partition_log_refuse_change();
REVOKE ALL ON audit_partition_log FROM PUBLIC;
GRANT SELECT ON audit_partition_log TO subdata_maintain;

-- The table as it was is renamed, its names freed for the partitioned table.
ALTER TABLE audit_events RENAME TO audit_events_unpartitioned;
ALTER TABLE audit_events_unpartitioned RENAME CONSTRAINT audit_events_pkey TO audit_events_unpartitioned_pkey;
ALTER INDEX audit_events_merchant_keyset RENAME TO audit_events_unpartitioned_merchant_keyset;
ALTER INDEX audit_events_merchant_key_keyset RENAME TO audit_events_unpartitioned_merchant_key_keyset;

-- The primary key must hold the partition key. (occurred_at, id) grows at its right edge as rows
-- arrive, where an index on a random id alone touches a random page of the whole index per row; it
-- also orders `subdata audit export` and the oldest-row figure of `subdata maintain`.
CREATE TABLE audit_events (
  id             text NOT NULL,
  occurred_at    timestamptz NOT NULL,
  merchant_id    text NOT NULL,
  api_key_id     text NOT NULL,
  request_id     text NOT NULL,
  method         text NOT NULL,
  route          text NOT NULL,
  query          text NOT NULL,
  resource_ids   text[] NOT NULL,
  result_count   integer NOT NULL,
  status         integer NOT NULL,
  client_ip      text NOT NULL,
  user_agent     text NOT NULL,
  latency_micros bigint NOT NULL,
  PRIMARY KEY (occurred_at, id)
) PARTITION BY RANGE (occurred_at);
CREATE INDEX audit_events_merchant_keyset ON audit_events (merchant_id, occurred_at, id);
CREATE INDEX audit_events_merchant_key_keyset ON audit_events (merchant_id, api_key_id, occurred_at, id);
-- Row triggers are cloned onto every partition, present and future; a statement trigger fires only
-- for the table it is on, so each partition gets its own TRUNCATE trigger when it is made.
CREATE TRIGGER audit_events_no_update_delete
  BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();
CREATE TRIGGER audit_events_no_truncate
  BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse_change();
REVOKE ALL ON audit_events FROM PUBLIC;
GRANT SELECT, INSERT ON audit_events TO subdata_auth;

-- A new partition's table: the parent's columns, rows kept inline up to 8,160 bytes (a partitioned
-- table has no storage of its own to set this on; see 20261125000100000), the TRUNCATE trigger, and no
-- privileges but the owner's. Attached by the caller.
CREATE FUNCTION subdata_audit_new_partition_table(name text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
  EXECUTE format('CREATE TABLE public.%I (LIKE public.audit_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS) WITH (toast_tuple_target = 8160)', name);
  EXECUTE format('CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON public.%I FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse_change()', name);
  EXECUTE format('REVOKE ALL ON public.%I FROM PUBLIC', name);
END
$$;
REVOKE ALL ON FUNCTION subdata_audit_new_partition_table(text) FROM PUBLIC;

-- The default partition catches a row whose month has no partition (maintenance stopped for months,
-- or a clock far off), so that an INSERT never fails for want of one: the audit is fail-closed, and a
-- missing partition must not turn every read into a 503. It stays empty while maintenance runs; rows
-- found in it are moved to their month by subdata_audit_drain_default().
SELECT subdata_audit_new_partition_table('audit_events_default');
ALTER TABLE audit_events ATTACH PARTITION audit_events_default DEFAULT;

-- The partitions of audit_events and their bounds, read from the catalog (so a partition attached or
-- detached by hand is seen as it is). TimeZone and DateStyle are pinned: pg_get_expr prints the bounds
-- with them.
CREATE FUNCTION subdata_audit_partitions()
RETURNS TABLE (partition_name text, range_start timestamptz, range_end timestamptz, is_default boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
SET DateStyle = 'ISO, YMD'
AS $$
  SELECT c.relname::text,
         CASE WHEN b.bound ~ '^FOR VALUES FROM \(''' THEN substring(b.bound FROM '^FOR VALUES FROM \(''([^'']+)''\)')::timestamptz END,
         CASE WHEN b.bound ~ 'TO \(''[^'']+''\)$' THEN substring(b.bound FROM 'TO \(''([^'']+)''\)$')::timestamptz END,
         b.bound = 'DEFAULT'
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
   CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound) b
   WHERE i.inhparent = 'public.audit_events'::regclass
$$;
REVOKE ALL ON FUNCTION subdata_audit_partitions() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION subdata_audit_partitions() TO subdata_maintain;

-- Makes the partition of the month that starts at month_start, unless a partition already covers that
-- instant. Built as a table of its own and then attached: ATTACH takes only a SHARE UPDATE EXCLUSIVE
-- lock on audit_events (inserts and reads go on) and an ACCESS EXCLUSIVE lock on the default partition
-- while it checks that none of its rows belong to the new month (none: it is empty).
CREATE FUNCTION subdata_audit_create_partition(month_start timestamptz) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
DECLARE
  name text := 'audit_events_' || to_char(month_start, 'YYYY_MM');
  month_end timestamptz := month_start + interval '1 month';
BEGIN
  IF month_start <> date_trunc('month', month_start) THEN
    RAISE EXCEPTION 'a partition starts at the beginning of a month (UTC), got %', month_start
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF EXISTS (SELECT FROM subdata_audit_partitions() p
              WHERE NOT p.is_default
                AND (p.range_start IS NULL OR p.range_start < month_end)
                AND (p.range_end IS NULL OR p.range_end > month_start)) THEN
    RETURN NULL;
  END IF;
  PERFORM subdata_audit_new_partition_table(name);
  EXECUTE format('ALTER TABLE public.audit_events ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)', name, month_start, month_end);
  INSERT INTO audit_partition_log (action, partition_name, range_start, range_end)
  VALUES ('created', name, month_start, month_end);
  RETURN name;
END
$$;
REVOKE ALL ON FUNCTION subdata_audit_create_partition(timestamptz) FROM PUBLIC;

-- Moves the rows of the default partition into partitions of their months, made for them, and returns
-- the partitions it made. While it works audit_events is locked (DETACH): it is meant for the rare day
-- the default partition holds rows, and takes time in proportion to them. Nothing is deleted: the old
-- default table is dropped only after its rows were inserted again, in this same transaction.
CREATE FUNCTION subdata_audit_drain_default() RETURNS SETOF text
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
DECLARE
  month timestamptz;
  created text;
  moved bigint;
BEGIN
  IF NOT EXISTS (SELECT FROM audit_events_default) THEN
    RETURN;
  END IF;
  ALTER TABLE audit_events DETACH PARTITION audit_events_default;
  ALTER TABLE audit_events_default RENAME TO audit_events_default_draining;
  PERFORM subdata_audit_new_partition_table('audit_events_default');
  ALTER TABLE audit_events ATTACH PARTITION audit_events_default DEFAULT;
  FOR month IN SELECT DISTINCT date_trunc('month', occurred_at) FROM audit_events_default_draining ORDER BY 1 LOOP
    created := subdata_audit_create_partition(month);
    IF created IS NOT NULL THEN
      RETURN NEXT created;
    END IF;
  END LOOP;
  INSERT INTO audit_events SELECT * FROM audit_events_default_draining;
  GET DIAGNOSTICS moved = ROW_COUNT;
  DROP TABLE audit_events_default_draining;
  INSERT INTO audit_partition_log (action, partition_name, rows) VALUES ('drained', 'audit_events_default', moved);
END
$$;
REVOKE ALL ON FUNCTION subdata_audit_drain_default() FROM PUBLIC;

-- What `subdata maintain` calls: drains the default partition if it holds rows, then makes sure the
-- current month and the next months_ahead have partitions. Returns the partitions it created (for the
-- drained rows too). A
-- bounded lock wait: if a long transaction holds the table, this run gives up and the next one tries
-- again (partitions are made months ahead, so a missed run costs nothing).
CREATE FUNCTION subdata_audit_prepare_partitions(months_ahead integer) RETURNS SETOF text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
SET lock_timeout = '2s'
AS $$
DECLARE
  this_month timestamptz := date_trunc('month', clock_timestamp());
  created text;
BEGIN
  IF months_ahead < 1 OR months_ahead > 24 THEN
    RAISE EXCEPTION 'months_ahead must be 1..24, got %', months_ahead USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN QUERY SELECT subdata_audit_drain_default();
  FOR step IN 0..months_ahead LOOP
    created := subdata_audit_create_partition(this_month + make_interval(months => step));
    IF created IS NOT NULL THEN
      RETURN NEXT created;
    END IF;
  END LOOP;
END
$$;
REVOKE ALL ON FUNCTION subdata_audit_prepare_partitions(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION subdata_audit_prepare_partitions(integer) TO subdata_maintain;

-- Retention removes a month in two steps, each its own call and transaction, so that no reader waits
-- while files are deleted. A DROP holds its locks until its files are unlinked at commit, which for a
-- large partition (a thousand 1 GB segment files at 8 TB) takes time; dropping a partition directly
-- would hold an ACCESS EXCLUSIVE lock on audit_events meanwhile.
--
-- 1. subdata_audit_detach_expired_partition: the oldest partition whose every row is older than
--    `retention` is detached and renamed <name>_expired. DETACH takes an ACCESS EXCLUSIVE lock on
--    audit_events for the catalog change only; the lock wait is bounded (2 s) so that reads and inserts
--    queued behind it wait at most that long, and the caller tries again. Returns its name and estimated
--    rows (no row when none is due). Never a partition younger than 30 days, whatever the caller asks,
--    and never the default partition.
-- 2. subdata_audit_drop_detached_partition: drops one table detached by step 1 (nobody else holds a
--    lock on it) and returns its name, or NULL when none is left. A run interrupted between the two
--    leaves the detached table for the next run's step 2.
CREATE FUNCTION subdata_audit_detach_expired_partition(retention interval)
RETURNS TABLE (partition_name text, approx_rows bigint)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
SET lock_timeout = '2s'
AS $$
#variable_conflict use_column
DECLARE
  doomed record;
  estimate bigint;
  size bigint;
BEGIN
  IF retention IS NULL OR retention < interval '30 days' THEN
    RAISE EXCEPTION 'the audit log keeps rows at least 30 days, got %', retention
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT p.partition_name, p.range_start, p.range_end INTO doomed
    FROM subdata_audit_partitions() p
   WHERE NOT p.is_default AND p.range_end IS NOT NULL AND p.range_end <= clock_timestamp() - retention
   ORDER BY p.range_end
   LIMIT 1;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT greatest(c.reltuples, 0)::bigint, pg_total_relation_size(c.oid) INTO estimate, size
    FROM pg_class c WHERE c.oid = format('public.%I', doomed.partition_name)::regclass;
  EXECUTE format('ALTER TABLE public.audit_events DETACH PARTITION public.%I', doomed.partition_name);
  EXECUTE format('ALTER TABLE public.%I RENAME TO %I', doomed.partition_name, doomed.partition_name || '_expired');
  INSERT INTO audit_partition_log (action, partition_name, range_start, range_end, rows, bytes)
  VALUES ('detached', doomed.partition_name, doomed.range_start, doomed.range_end, estimate, size);
  partition_name := doomed.partition_name;
  approx_rows := estimate;
  RETURN NEXT;
END
$$;
REVOKE ALL ON FUNCTION subdata_audit_detach_expired_partition(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION subdata_audit_detach_expired_partition(interval) TO subdata_maintain;

CREATE FUNCTION subdata_audit_drop_detached_partition() RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
DECLARE
  detached record;
BEGIN
  -- Only what step 1 detached and nothing has dropped since, and only while it is still no partition.
  SELECT l.partition_name, l.range_start, l.range_end, l.rows, l.bytes INTO detached
    FROM audit_partition_log l
    JOIN pg_class c ON c.relname = l.partition_name || '_expired' AND c.relnamespace = 'public'::regnamespace
   WHERE l.action = 'detached' AND NOT c.relispartition
     AND NOT EXISTS (SELECT FROM audit_partition_log d
                      WHERE d.action = 'dropped' AND d.partition_name = l.partition_name AND d.id > l.id)
   ORDER BY l.id
   LIMIT 1;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  EXECUTE format('DROP TABLE public.%I', detached.partition_name || '_expired');
  INSERT INTO audit_partition_log (action, partition_name, range_start, range_end, rows, bytes)
  VALUES ('dropped', detached.partition_name, detached.range_start, detached.range_end, detached.rows, detached.bytes);
  RETURN detached.partition_name;
END
$$;
REVOKE ALL ON FUNCTION subdata_audit_drop_detached_partition() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION subdata_audit_drop_detached_partition() TO subdata_maintain;

-- The rows written before this migration become one partition, attached in place (no copy): it holds
-- everything before the end of this month and is dropped whole when its youngest month expires. A row
-- dated after that (a clock far ahead) goes to the default partition, and from there to its own month.
-- An empty table is simply dropped.
DO $$
DECLARE
  bound timestamptz := date_trunc('month', clock_timestamp()) + interval '1 month';
  name text := 'audit_events_before_' || to_char(date_trunc('month', clock_timestamp()) + interval '1 month', 'YYYY_MM');
BEGIN
  IF NOT EXISTS (SELECT FROM audit_events_unpartitioned) THEN
    DROP TABLE audit_events_unpartitioned;
    RETURN;
  END IF;
  -- The cloned row trigger of the parent replaces this one; the TRUNCATE trigger stays.
  DROP TRIGGER audit_events_no_update_delete ON audit_events_unpartitioned;
  WITH moved AS (DELETE FROM audit_events_unpartitioned WHERE occurred_at >= bound RETURNING *)
  INSERT INTO audit_events_default SELECT * FROM moved;
  -- The parent's key is (occurred_at, id): ATTACH builds that index; the old key on id alone goes.
  ALTER TABLE audit_events_unpartitioned DROP CONSTRAINT audit_events_unpartitioned_pkey;
  REVOKE ALL ON audit_events_unpartitioned FROM PUBLIC, subdata_auth;
  EXECUTE format('ALTER TABLE audit_events_unpartitioned RENAME TO %I', name);
  EXECUTE format('ALTER INDEX audit_events_unpartitioned_merchant_keyset RENAME TO %I', name || '_merchant_keyset');
  EXECUTE format('ALTER INDEX audit_events_unpartitioned_merchant_key_keyset RENAME TO %I', name || '_merchant_key_keyset');
  EXECUTE format('ALTER TABLE audit_events ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', name, bound);
  INSERT INTO audit_partition_log (action, partition_name, range_end) VALUES ('created', name, bound);
END
$$;

-- This month and the next three; `subdata maintain` keeps SUBDATA_AUDIT_PARTITIONS_AHEAD months ahead.
SELECT subdata_audit_prepare_partitions(3);

-- Down Migration

SET LOCAL TimeZone = 'UTC';
ALTER TABLE audit_events RENAME TO audit_events_partitioned;
ALTER TABLE audit_events_partitioned RENAME CONSTRAINT audit_events_pkey TO audit_events_partitioned_pkey;
ALTER INDEX audit_events_merchant_keyset RENAME TO audit_events_partitioned_merchant_keyset;
ALTER INDEX audit_events_merchant_key_keyset RENAME TO audit_events_partitioned_merchant_key_keyset;
CREATE TABLE audit_events (
  id             text PRIMARY KEY,
  occurred_at    timestamptz NOT NULL,
  merchant_id    text NOT NULL,
  api_key_id     text NOT NULL,
  request_id     text NOT NULL,
  method         text NOT NULL,
  route          text NOT NULL,
  query          text NOT NULL,
  resource_ids   text[] NOT NULL,
  result_count   integer NOT NULL,
  status         integer NOT NULL,
  client_ip      text NOT NULL,
  user_agent     text NOT NULL,
  latency_micros bigint NOT NULL
) WITH (toast_tuple_target = 8160);
INSERT INTO audit_events SELECT * FROM audit_events_partitioned;
CREATE INDEX audit_events_merchant_keyset ON audit_events (merchant_id, occurred_at, id);
CREATE INDEX audit_events_merchant_key_keyset ON audit_events (merchant_id, api_key_id, occurred_at, id);
CREATE TRIGGER audit_events_no_update_delete
  BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();
CREATE TRIGGER audit_events_no_truncate
  BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse_change();
REVOKE ALL ON audit_events FROM PUBLIC;
GRANT SELECT, INSERT ON audit_events TO subdata_auth;
DROP TABLE audit_events_partitioned;
DROP FUNCTION subdata_audit_drop_detached_partition();
DROP FUNCTION subdata_audit_detach_expired_partition(interval);
DROP FUNCTION subdata_audit_prepare_partitions(integer);
DROP FUNCTION subdata_audit_drain_default();
DROP FUNCTION subdata_audit_create_partition(timestamptz);
DROP FUNCTION subdata_audit_partitions();
DROP FUNCTION subdata_audit_new_partition_table(text);
DROP TABLE audit_partition_log;
DROP FUNCTION audit_partition_log_refuse_change();
REVOKE ALL ON SCHEMA public FROM subdata_maintain;
