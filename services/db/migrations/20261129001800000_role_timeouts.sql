-- Up Migration

-- Every session of a service role has a statement deadline, ends when it idles inside a transaction
-- (its row locks and advisory locks are freed instead of held until the connection dies), and notices
-- a client that vanished without a reset within about 25 s (TCP keepalive and user timeout on
-- Postgres' side of the socket). The services' pools set the same on connect (services/runtime/src/
-- pg.ts, with their own statement_timeout, DATABASE_STATEMENT_TIMEOUT_MS); these role defaults cover
-- every other session of the roles (psql, a tool, an older build). Settings from a connection's
-- startup packet override them. Roles are cluster-wide: these apply in every database.
-- A migrating user without CREATEROLE cannot change the roles: then a warning names what an operator
-- must run, and the pools' own settings still apply.
DO $$
DECLARE
  role_name text;
  timeouts constant jsonb := jsonb_build_object(
    'subdata_query', '10s', 'subdata_auth', '10s', 'subdata_webhook', '10s', 'subdata_console', '10s',
    -- Partition and purge functions work in bounded batches but may take minutes on a large table.
    'subdata_maintain', '15min');
  entry text;
  statements text[] := ARRAY[]::text[];
BEGIN
  FOR role_name IN SELECT jsonb_object_keys(timeouts) LOOP
    CONTINUE WHEN NOT EXISTS (SELECT FROM pg_roles WHERE rolname = role_name);
    FOREACH entry IN ARRAY ARRAY[
      'statement_timeout=' || (timeouts ->> role_name),
      'idle_in_transaction_session_timeout=60s',
      'tcp_keepalives_idle=10',
      'tcp_keepalives_interval=5',
      'tcp_keepalives_count=3',
      'tcp_user_timeout=20000'
    ] LOOP
      -- Only what differs: roles are shared by every database of the cluster, and two databases migrating
      -- at once must not both rewrite the same role's settings.
      CONTINUE WHEN EXISTS (
        SELECT FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole
         WHERE r.rolname = role_name AND s.setdatabase = 0 AND entry = ANY (s.setconfig));
      statements := statements || format('ALTER ROLE %I SET %s = %L', role_name, split_part(entry, '=', 1), split_part(entry, '=', 2));
    END LOOP;
  END LOOP;
  BEGIN
    FOREACH entry IN ARRAY statements LOOP
      EXECUTE entry;
    END LOOP;
  EXCEPTION WHEN insufficient_privilege THEN
    RAISE WARNING 'subdata: could not set the service roles'' timeouts (needs CREATEROLE); run as a superuser: %', array_to_string(statements, '; ');
  END;
END
$$;

-- Down Migration

DO $$
DECLARE
  role_name text;
  setting text;
BEGIN
  FOR role_name IN SELECT rolname FROM pg_roles WHERE rolname IN ('subdata_query', 'subdata_auth', 'subdata_webhook', 'subdata_console', 'subdata_maintain') LOOP
    FOREACH setting IN ARRAY ARRAY['statement_timeout', 'idle_in_transaction_session_timeout', 'tcp_keepalives_idle', 'tcp_keepalives_interval',
                                   'tcp_keepalives_count', 'tcp_user_timeout'] LOOP
      EXECUTE format('ALTER ROLE %I RESET %s', role_name, setting);
    END LOOP;
  END LOOP;
END
$$;
