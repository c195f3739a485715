-- Up Migration

-- Change capture for subscriptions: a trigger-fed outbox. Every real change of a subscription row,
-- by any writer (the app, a migration, psql), inserts exactly one event_outbox row in the writer's own
-- transaction, so an event exists if and only if the change committed. The relay
-- (services/relay/src/main.ts) publishes pending rows to JetStream with Nats-Msg-Id = id and
-- then sets published_at.

CREATE TABLE event_outbox (
  id              text PRIMARY KEY DEFAULT subdata_new_id('evt'),
  -- Insertion order. For one subscription it is also commit order (a change waits for the row lock
  -- of the previous one), so it orders a subscription's events even where version cannot: a delete
  -- carries the last version again, and a deleted id may be inserted anew at version 1.
  seq             bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  -- No foreign keys: a delete event outlives its subscription, and capture must never fail a write.
  merchant_id     text NOT NULL,
  subscription_id text NOT NULL,
  event_type      text NOT NULL CHECK (event_type IN ('subscription.created', 'subscription.updated', 'subscription.deleted')),
  -- The subscription's version after the change (deletes: the last version).
  version         bigint NOT NULL,
  occurred_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- {"subscription": snapshot after (deletes: the old row), "previous": snapshot before (updates
  -- only, else null), "changed_columns": [column names whose value differs]}. A snapshot is the row
  -- as JSON (timestamps in UTC, bigints as strings) with "customer" and "plan" joined in.
  payload         jsonb NOT NULL,
  published_at    timestamptz,
  attempts        integer NOT NULL DEFAULT 0,
  last_error      text
);
-- The relay claims pending rows in seq order, and checks that no earlier pending row of the same
-- subscription is held elsewhere; both read only the (small) pending part of the table.
CREATE INDEX event_outbox_pending ON event_outbox (seq) WHERE published_at IS NULL;
CREATE INDEX event_outbox_pending_subscription ON event_outbox (subscription_id, seq) WHERE published_at IS NULL;
-- Retention deletes published rows by age.
CREATE INDEX event_outbox_published ON event_outbox (published_at) WHERE published_at IS NOT NULL;

-- A subscription as JSON, with its customer and plan, in a stable format whoever the writer is: UTC
-- timestamps (the function pins TimeZone), bigints as strings (JSON numbers lose precision in JS).
CREATE FUNCTION subdata_subscription_snapshot(s subscriptions) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
  SELECT to_jsonb(s) || jsonb_build_object(
    'price_minor', s.price_minor::text,
    'version', s.version::text,
    'customer', (SELECT jsonb_build_object('id', c.id, 'email', c.email, 'name', c.name)
                   FROM customers c WHERE c.id = s.customer_id),
    'plan', (SELECT jsonb_build_object('id', p.id, 'name', p.name, 'interval', p.interval, 'interval_count', p.interval_count)
               FROM plans p WHERE p.id = s.plan_id))
$$;

-- SECURITY DEFINER so that any role allowed to write subscriptions produces its events without any
-- privilege on event_outbox; the fixed search_path keeps a writer from substituting objects.
CREATE FUNCTION subscriptions_capture_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
DECLARE
  changed jsonb;
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO event_outbox (merchant_id, subscription_id, event_type, version, payload)
    VALUES (NEW.merchant_id, NEW.id, 'subscription.created', NEW.version,
            jsonb_build_object('subscription', subdata_subscription_snapshot(NEW), 'previous', NULL,
                               'changed_columns', '[]'::jsonb));
  ELSIF TG_OP = 'UPDATE' THEN
    -- A no-op UPDATE (the BEFORE trigger left version alone) is not a change: no event.
    IF NEW IS NOT DISTINCT FROM OLD THEN
      RETURN NULL;
    END IF;
    SELECT coalesce(jsonb_agg(n.key ORDER BY n.key), '[]'::jsonb) INTO changed
      FROM jsonb_each(to_jsonb(NEW)) n
      JOIN jsonb_each(to_jsonb(OLD)) o ON o.key = n.key
     WHERE n.value IS DISTINCT FROM o.value;
    INSERT INTO event_outbox (merchant_id, subscription_id, event_type, version, payload)
    VALUES (NEW.merchant_id, NEW.id, 'subscription.updated', NEW.version,
            jsonb_build_object('subscription', subdata_subscription_snapshot(NEW),
                               'previous', subdata_subscription_snapshot(OLD), 'changed_columns', changed));
  ELSE
    INSERT INTO event_outbox (merchant_id, subscription_id, event_type, version, payload)
    VALUES (OLD.merchant_id, OLD.id, 'subscription.deleted', OLD.version,
            jsonb_build_object('subscription', subdata_subscription_snapshot(OLD), 'previous', NULL,
                               'changed_columns', '[]'::jsonb));
  END IF;
  -- Wakes listening relays at commit (Postgres folds identical notifications of one transaction).
  PERFORM pg_notify('subdata_outbox', '');
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION subscriptions_capture_change() FROM PUBLIC;
REVOKE ALL ON FUNCTION subdata_subscription_snapshot(subscriptions) FROM PUBLIC;

CREATE TRIGGER subscriptions_capture_change
  AFTER INSERT OR UPDATE OR DELETE ON subscriptions
  FOR EACH ROW EXECUTE FUNCTION subscriptions_capture_change();

-- TRUNCATE fires no row triggers, so it would change subscriptions without events: refuse it.
CREATE FUNCTION subscriptions_refuse_truncate() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  RAISE EXCEPTION 'TRUNCATE subscriptions would bypass change capture; DELETE the rows instead'
    USING ERRCODE = 'feature_not_supported';
END
$$;
CREATE TRIGGER subscriptions_refuse_truncate
  BEFORE TRUNCATE ON subscriptions
  FOR EACH STATEMENT EXECUTE FUNCTION subscriptions_refuse_truncate();

-- Retention: published rows older than `retention` go, at most max_rows per call (short transactions).
-- SECURITY DEFINER so the relay role needs no DELETE on the table: it can only remove what is
-- published and old, never a pending event.
CREATE FUNCTION subdata_purge_published_events(retention interval, max_rows integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  purged integer;
BEGIN
  IF retention < interval '1 hour' THEN
    RAISE EXCEPTION 'retention must be at least 1 hour, got %', retention USING ERRCODE = 'invalid_parameter_value';
  END IF;
  WITH doomed AS (
    SELECT id FROM event_outbox
     WHERE published_at < clock_timestamp() - retention
     ORDER BY published_at
     LIMIT max_rows
       FOR UPDATE SKIP LOCKED
  )
  DELETE FROM event_outbox o USING doomed d WHERE o.id = d.id;
  GET DIAGNOSTICS purged = ROW_COUNT;
  RETURN purged;
END
$$;
REVOKE ALL ON FUNCTION subdata_purge_published_events(interval, integer) FROM PUBLIC;

-- The relay connects as subdata_webhook: it reads the outbox, records publishing, purges old rows.
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'subdata_webhook') THEN
    CREATE ROLE subdata_webhook LOGIN;
  END IF;
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO subdata_webhook', current_database());
END
$$;
GRANT USAGE ON SCHEMA public TO subdata_webhook;
-- UPDATE on these columns only (it also lets the relay lock rows with FOR UPDATE).
GRANT SELECT, UPDATE (published_at, attempts, last_error) ON event_outbox TO subdata_webhook;
GRANT EXECUTE ON FUNCTION subdata_purge_published_events(interval, integer) TO subdata_webhook;

-- Down Migration

REVOKE ALL ON event_outbox FROM subdata_webhook;
DROP TRIGGER subscriptions_refuse_truncate ON subscriptions;
DROP TRIGGER subscriptions_capture_change ON subscriptions;
DROP FUNCTION subdata_purge_published_events(interval, integer);
DROP FUNCTION subscriptions_refuse_truncate();
DROP FUNCTION subscriptions_capture_change();
DROP FUNCTION subdata_subscription_snapshot(subscriptions);
DROP TABLE event_outbox;
