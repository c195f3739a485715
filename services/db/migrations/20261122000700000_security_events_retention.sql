-- Up Migration

-- Retention of the security log (failed authentications): the auth service purges rows older than
-- SUBDATA_SECURITY_EVENT_RETENTION_DAYS. It does so through this function rather than a DELETE grant,
-- so the role still cannot remove recent rows (the evidence of an attack in progress) even if the
-- service is compromised: only rows older than a day, oldest first, a bounded batch per call.
-- audit_events is not affected: it stays append-only for every role.
CREATE FUNCTION subdata_purge_security_events(retention interval, max_rows integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  purged integer;
BEGIN
  IF retention < interval '1 day' THEN
    RAISE EXCEPTION 'retention must be at least 1 day, got %', retention USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF max_rows < 1 OR max_rows > 100000 THEN
    RAISE EXCEPTION 'max_rows must be 1..100000, got %', max_rows USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Oldest first along security_events_occurred; SKIP LOCKED lets several replicas purge at once.
  WITH doomed AS (
    SELECT id FROM security_events
     WHERE occurred_at < clock_timestamp() - retention
     ORDER BY occurred_at, id
     LIMIT max_rows
       FOR UPDATE SKIP LOCKED
  )
  DELETE FROM security_events s USING doomed d WHERE s.id = d.id;
  GET DIAGNOSTICS purged = ROW_COUNT;
  RETURN purged;
END
$$;
REVOKE ALL ON FUNCTION subdata_purge_security_events(interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION subdata_purge_security_events(interval, integer) TO subdata_auth;

-- Down Migration

DROP FUNCTION subdata_purge_security_events(interval, integer);
