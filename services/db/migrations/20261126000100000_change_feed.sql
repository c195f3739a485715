-- Up Migration

-- The change feed (GET /v1/events). Every committed INSERT, UPDATE or DELETE of a subscription, a charge
-- or an order, by any writer, becomes exactly one change_events row in the writer's own transaction.
-- Where that event stands in its merchant's feed is decided at commit, not at insert: a deferred trigger
-- takes a per-merchant transaction lock and the next value of one sequence, and records it in
-- change_commits. The lock is held until the transaction has committed and is visible, so a merchant's
-- transactions receive positions in exactly the order they commit, and a reader who has seen position p
-- can never later find a committed event below p (docs/decisions.md, "The feed's order is commit order").

-- Charges and orders get a database-maintained version like subscriptions: +1 on every real change.
ALTER TABLE charges ADD COLUMN version bigint NOT NULL DEFAULT 1;
ALTER TABLE orders ADD COLUMN version bigint NOT NULL DEFAULT 1;
-- GET /v1/charges walks a merchant's charges by keyset (with a subscription: charges_merchant_subscription).
CREATE INDEX charges_merchant_keyset ON charges (merchant_id, created_at, id);

CREATE FUNCTION subdata_stamp_version() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.version := 1;
    RETURN NEW;
  END IF;
  IF NEW IS NOT DISTINCT FROM OLD THEN
    RETURN NEW;
  END IF;
  NEW.version := OLD.version + 1;
  RETURN NEW;
END
$$;
CREATE TRIGGER charges_stamp_version
  BEFORE INSERT OR UPDATE ON charges
  FOR EACH ROW EXECUTE FUNCTION subdata_stamp_version();
-- Orders have updated_at, which the subscriptions' function keeps too.
CREATE TRIGGER orders_stamp_version
  BEFORE INSERT OR UPDATE ON orders
  FOR EACH ROW EXECUTE FUNCTION subscriptions_stamp_version();

-- A row never moves to another merchant: its events, and every copy made from the feed, would otherwise
-- carry one tenant's data into another's.
CREATE FUNCTION subdata_refuse_merchant_change() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF NEW.merchant_id IS DISTINCT FROM OLD.merchant_id THEN
    RAISE EXCEPTION '% % cannot move from merchant % to %', TG_TABLE_NAME, OLD.id, OLD.merchant_id, NEW.merchant_id
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER subscriptions_refuse_merchant_change BEFORE UPDATE OF merchant_id ON subscriptions
  FOR EACH ROW EXECUTE FUNCTION subdata_refuse_merchant_change();
CREATE TRIGGER charges_refuse_merchant_change BEFORE UPDATE OF merchant_id ON charges
  FOR EACH ROW EXECUTE FUNCTION subdata_refuse_merchant_change();
CREATE TRIGGER orders_refuse_merchant_change BEFORE UPDATE OF merchant_id ON orders
  FOR EACH ROW EXECUTE FUNCTION subdata_refuse_merchant_change();

CREATE TABLE change_events (
  id            text PRIMARY KEY DEFAULT subdata_new_id('evt'),
  -- Insertion order: within one transaction, the order of its changes.
  seq           bigint GENERATED ALWAYS AS IDENTITY,
  -- The writing transaction; change_commits gives it its place in the merchant's feed at commit.
  xid           xid8 NOT NULL DEFAULT pg_current_xact_id(),
  -- No foreign keys: a delete event outlives its row, and capture must never fail a write.
  merchant_id   text NOT NULL,
  resource_type text NOT NULL CHECK (resource_type IN ('subscription', 'charge', 'order')),
  resource_id   text NOT NULL,
  event_type    text NOT NULL CHECK (event_type IN (
                  'subscription.created', 'subscription.updated', 'subscription.deleted',
                  'charge.created', 'charge.updated', 'charge.deleted',
                  'order.created', 'order.updated', 'order.deleted')),
  -- The resource's version after the change (deletes: the last version).
  version       bigint NOT NULL,
  occurred_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- {"object": snapshot after (deletes: the last state), "previous": the snapshot's keys whose value
  -- was different before (updates only, else null; the previous state is object overlaid with it),
  -- "changed_columns": [columns whose value differs]}. A snapshot is the row as JSON (timestamps in
  -- UTC, bigints as strings) with what the public object joins in (a subscription's customer and plan,
  -- an order's line items). Keeping only the differing keys of the previous state halves an update's
  -- row (~1 kB instead of ~2 kB for a subscription).
  payload       jsonb NOT NULL
);
-- A transaction's events of one merchant, in order: the feed's inner walk, and the commit trigger's lookup.
CREATE INDEX change_events_transaction ON change_events (xid, merchant_id, seq);

-- Positions: one sequence for all merchants. Within a merchant they increase in commit order (the
-- lock below); across merchants they interleave, which no reader can observe.
CREATE SEQUENCE change_commit_position AS bigint;

-- One row per (transaction, merchant) that wrote events, made at commit: the merchant's feed is
-- change_commits in position order, each expanding to its transaction's events in seq order.
CREATE TABLE change_commits (
  merchant_id  text NOT NULL,
  position     bigint NOT NULL,
  xid          xid8 NOT NULL,
  committed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (merchant_id, position),
  UNIQUE (xid, merchant_id)
);
CREATE INDEX change_commits_committed ON change_commits (committed_at);

-- What retention removed: a cursor before purged_through has lost events and must resynchronise (410).
CREATE TABLE change_feed_horizons (
  merchant_id     text PRIMARY KEY,
  purged_through  bigint NOT NULL
);

-- Runs at commit (deferred), once per event row. The merchants a transaction wrote events for are kept
-- in a transaction-local setting by subdata_record_change, and the ones already positioned in another;
-- the first run does the work and later runs compare the two and return. Reading settings instead of
-- tables keeps this free of SERIALIZABLE predicate locks (concurrent writers would otherwise fail each
-- other with serialization errors) and O(1) per event.
--
-- Merchants are locked in one global order (by lock key), so two transactions spanning the same merchants
-- cannot deadlock here. The advisory lock is transaction-scoped: it is released only after the commit
-- is visible to every new snapshot, so the next transaction of the merchant draws a higher position only
-- after this one's events can be read. Advisory locks and sequences are outside MVCC, so this works at
-- every isolation level (a counter row would make concurrent REPEATABLE READ writers fail).
CREATE FUNCTION change_events_take_position() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  written text := coalesce(current_setting('subdata.change_merchants', true), '');
  positioned text := coalesce(current_setting('subdata.positioned_merchants', true), '');
  pending text[];
  merchant text;
BEGIN
  IF written = positioned THEN
    RETURN NULL;
  END IF;
  SELECT array_agg(m ORDER BY hashtext(m), m) INTO pending
    FROM unnest(string_to_array(trim(BOTH ',' FROM written), ',')) m
   WHERE position(',' || m || ',' IN positioned) = 0;
  FOREACH merchant IN ARRAY coalesce(pending, '{}') LOOP
    -- Class 0x5344 ('SD') keeps these apart from other advisory locks; a hash collision between two
    -- merchants only makes them share a lock.
    PERFORM pg_advisory_xact_lock(21316, hashtext(merchant));
  END LOOP;
  FOREACH merchant IN ARRAY coalesce(pending, '{}') LOOP
    INSERT INTO change_commits (merchant_id, position, xid)
    VALUES (merchant, nextval('change_commit_position'), pg_current_xact_id());
    -- Wakes the feed's long polls at commit; the payload names the merchant only.
    PERFORM pg_notify('subdata_changes', merchant);
  END LOOP;
  PERFORM set_config('subdata.positioned_merchants', written, true);
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION change_events_take_position() FROM PUBLIC;

CREATE CONSTRAINT TRIGGER change_events_take_position
  AFTER INSERT ON change_events
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION change_events_take_position();

-- Snapshots: the row as JSON in a stable format whoever the writer is (UTC, bigints as strings).
CREATE FUNCTION subdata_charge_snapshot(c charges) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
  SELECT to_jsonb(c) || jsonb_build_object(
    'amount_minor', c.amount_minor::text,
    'amount_refunded_minor', c.amount_refunded_minor::text,
    'version', c.version::text)
$$;

-- An order with its line items as they are when the snapshot is taken.
CREATE FUNCTION subdata_order_snapshot(o orders) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
  SELECT to_jsonb(o) || jsonb_build_object(
    'number', o.number::text,
    'subtotal_minor', o.subtotal_minor::text,
    'discount_minor', o.discount_minor::text,
    'shipping_minor', o.shipping_minor::text,
    'tax_minor', o.tax_minor::text,
    'total_minor', o.total_minor::text,
    'version', o.version::text,
    'line_items', coalesce((
      SELECT jsonb_agg(jsonb_build_object(
               'position', li.position, 'sku', li.sku, 'title', li.title, 'quantity', li.quantity,
               'unit_price_minor', li.unit_price_minor::text, 'total_minor', li.total_minor::text)
             ORDER BY li.position)
        FROM order_line_items li
       WHERE li.order_id = o.id AND li.merchant_id = o.merchant_id), '[]'::jsonb))
$$;
REVOKE ALL ON FUNCTION subdata_charge_snapshot(charges) FROM PUBLIC;
REVOKE ALL ON FUNCTION subdata_order_snapshot(orders) FROM PUBLIC;

-- The columns whose values differ between two versions of a row, sorted.
CREATE FUNCTION subdata_changed_columns(new_row jsonb, old_row jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
  SELECT coalesce(jsonb_agg(n.key ORDER BY n.key), '[]'::jsonb)
    FROM jsonb_each(new_row) n
    JOIN jsonb_each(old_row) o ON o.key = n.key
   WHERE n.value IS DISTINCT FROM o.value
$$;

-- The one writer of change_events. Subscription events also go to event_outbox, which the relay
-- publishes to JetStream for webhooks; the outbox row has the event's id.
CREATE FUNCTION subdata_record_change(
  kind text, operation text, merchant text, resource text, resource_version bigint,
  snapshot jsonb, previous jsonb, changed jsonb
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  new_type text := kind || '.' || operation;
  new_id text;
  new_time timestamptz;
  merchants text;
BEGIN
  INSERT INTO change_events (merchant_id, resource_type, resource_id, event_type, version, payload)
  VALUES (merchant, kind, resource, new_type, resource_version,
          jsonb_build_object('object', snapshot, 'previous',
                             (SELECT jsonb_object_agg(p.key, p.value) FROM jsonb_each(previous) p
                               WHERE p.value IS DISTINCT FROM snapshot -> p.key),
                             'changed_columns', changed))
  RETURNING change_events.id, change_events.occurred_at INTO new_id, new_time;
  -- The merchants this transaction wrote events for, as ",a,b," (read at commit by change_events_take_position).
  merchants := coalesce(nullif(current_setting('subdata.change_merchants', true), ''), ',');
  IF position(',' || merchant || ',' IN merchants) = 0 THEN
    PERFORM set_config('subdata.change_merchants', merchants || merchant || ',', true);
  END IF;
  IF kind = 'subscription' THEN
    INSERT INTO event_outbox (id, merchant_id, subscription_id, event_type, version, occurred_at, payload)
    VALUES (new_id, merchant, resource, new_type, resource_version, new_time,
            jsonb_build_object('subscription', snapshot, 'previous', previous, 'changed_columns', changed));
    PERFORM pg_notify('subdata_outbox', '');
  END IF;
END
$$;
REVOKE ALL ON FUNCTION subdata_record_change(text, text, text, text, bigint, jsonb, jsonb, jsonb) FROM PUBLIC;

-- Subscriptions: same capture as before, now through subdata_record_change.
CREATE OR REPLACE FUNCTION subscriptions_capture_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM subdata_record_change('subscription', 'created', NEW.merchant_id, NEW.id, NEW.version,
                                  subdata_subscription_snapshot(NEW), NULL, '[]'::jsonb);
  ELSIF TG_OP = 'UPDATE' THEN
    -- A no-op UPDATE (the BEFORE trigger left version alone) is not a change: no event.
    IF NEW IS NOT DISTINCT FROM OLD THEN
      RETURN NULL;
    END IF;
    PERFORM subdata_record_change('subscription', 'updated', NEW.merchant_id, NEW.id, NEW.version,
                                  subdata_subscription_snapshot(NEW), subdata_subscription_snapshot(OLD),
                                  subdata_changed_columns(to_jsonb(NEW), to_jsonb(OLD)));
  ELSE
    PERFORM subdata_record_change('subscription', 'deleted', OLD.merchant_id, OLD.id, OLD.version,
                                  subdata_subscription_snapshot(OLD), NULL, '[]'::jsonb);
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION charges_capture_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM subdata_record_change('charge', 'created', NEW.merchant_id, NEW.id, NEW.version,
                                  subdata_charge_snapshot(NEW), NULL, '[]'::jsonb);
  ELSIF TG_OP = 'UPDATE' THEN
    IF NEW IS NOT DISTINCT FROM OLD THEN
      RETURN NULL;
    END IF;
    PERFORM subdata_record_change('charge', 'updated', NEW.merchant_id, NEW.id, NEW.version,
                                  subdata_charge_snapshot(NEW), subdata_charge_snapshot(OLD),
                                  subdata_changed_columns(to_jsonb(NEW), to_jsonb(OLD)));
  ELSE
    PERFORM subdata_record_change('charge', 'deleted', OLD.merchant_id, OLD.id, OLD.version,
                                  subdata_charge_snapshot(OLD), NULL, '[]'::jsonb);
  END IF;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION charges_capture_change() FROM PUBLIC;
CREATE TRIGGER charges_capture_change
  AFTER INSERT OR UPDATE OR DELETE ON charges
  FOR EACH ROW EXECUTE FUNCTION charges_capture_change();

-- Orders carry their line items, and an app writes an order and its items in one transaction, items
-- after the order. So order creates and updates are captured at commit (a deferred trigger), when the
-- items are in place: the event keeps the order's columns as of its change (NEW) with the items as
-- committed. A delete is captured before the row goes (BEFORE DELETE), while the items that cascade
-- with it still exist, so the last state includes them.
CREATE FUNCTION orders_capture_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM subdata_record_change('order', 'created', NEW.merchant_id, NEW.id, NEW.version,
                                  subdata_order_snapshot(NEW), NULL, '[]'::jsonb);
    RETURN NULL;
  ELSIF TG_OP = 'UPDATE' THEN
    IF NEW IS NOT DISTINCT FROM OLD THEN
      RETURN NULL;
    END IF;
    PERFORM subdata_record_change('order', 'updated', NEW.merchant_id, NEW.id, NEW.version,
                                  subdata_order_snapshot(NEW), subdata_order_snapshot(OLD),
                                  subdata_changed_columns(to_jsonb(NEW), to_jsonb(OLD)));
    RETURN NULL;
  END IF;
  PERFORM subdata_record_change('order', 'deleted', OLD.merchant_id, OLD.id, OLD.version,
                                subdata_order_snapshot(OLD), NULL, '[]'::jsonb);
  RETURN OLD;
END
$$;
REVOKE ALL ON FUNCTION orders_capture_change() FROM PUBLIC;
CREATE CONSTRAINT TRIGGER orders_capture_change
  AFTER INSERT OR UPDATE ON orders
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION orders_capture_change();
CREATE TRIGGER orders_capture_delete
  BEFORE DELETE ON orders
  FOR EACH ROW EXECUTE FUNCTION orders_capture_change();

-- A line item changes its order: touch the order (version +1, order.updated) unless this transaction
-- already wrote the order row, whose own event, taken at commit, carries the items anyway. A delete
-- that cascades from its order's delete finds no order row and does nothing.
CREATE FUNCTION order_line_items_touch_order() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  item order_line_items := coalesce(NEW, OLD);
BEGIN
  UPDATE orders o SET updated_at = clock_timestamp()
   WHERE o.id = item.order_id AND o.merchant_id = item.merchant_id
     AND o.xmin <> pg_current_xact_id()::xid;
  IF TG_OP = 'UPDATE' AND (OLD.order_id, OLD.merchant_id) IS DISTINCT FROM (NEW.order_id, NEW.merchant_id) THEN
    UPDATE orders o SET updated_at = clock_timestamp()
     WHERE o.id = OLD.order_id AND o.merchant_id = OLD.merchant_id
       AND o.xmin <> pg_current_xact_id()::xid;
  END IF;
  RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION order_line_items_touch_order() FROM PUBLIC;
CREATE TRIGGER order_line_items_touch_order
  AFTER INSERT OR UPDATE OR DELETE ON order_line_items
  FOR EACH ROW EXECUTE FUNCTION order_line_items_touch_order();

-- TRUNCATE fires no row triggers, so it would change rows without events: refuse it.
CREATE FUNCTION subdata_refuse_truncate() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  RAISE EXCEPTION 'TRUNCATE % would bypass change capture; DELETE the rows instead', TG_TABLE_NAME
    USING ERRCODE = 'feature_not_supported';
END
$$;
CREATE TRIGGER charges_refuse_truncate BEFORE TRUNCATE ON charges
  FOR EACH STATEMENT EXECUTE FUNCTION subdata_refuse_truncate();
CREATE TRIGGER orders_refuse_truncate BEFORE TRUNCATE ON orders
  FOR EACH STATEMENT EXECUTE FUNCTION subdata_refuse_truncate();
CREATE TRIGGER order_line_items_refuse_truncate BEFORE TRUNCATE ON order_line_items
  FOR EACH STATEMENT EXECUTE FUNCTION subdata_refuse_truncate();

-- Subscription events from before the feed existed join it, in their original order (one transaction:
-- this migration's, so they share one position per merchant and keep their seq order inside it). They
-- bypass subdata_record_change, so the merchants are named for the commit trigger here.
SELECT set_config('subdata.change_merchants', coalesce(',' || string_agg(DISTINCT merchant_id, ',') || ',', ''), true)
  FROM event_outbox;
INSERT INTO change_events (id, merchant_id, resource_type, resource_id, event_type, version, occurred_at, payload)
SELECT o.id, o.merchant_id, 'subscription', o.subscription_id, o.event_type, o.version, o.occurred_at,
       jsonb_build_object('object', o.payload -> 'subscription',
                          'previous', (SELECT jsonb_object_agg(p.key, p.value) FROM jsonb_each(nullif(o.payload -> 'previous', 'null'::jsonb)) p
                                        WHERE p.value IS DISTINCT FROM o.payload -> 'subscription' -> p.key),
                          'changed_columns', o.payload -> 'changed_columns')
  FROM event_outbox o
 ORDER BY o.seq;

-- Retention: whole commits older than `retention` go, oldest first, at most max_commits per call, and
-- each merchant's horizon moves past them in the same transaction. SECURITY DEFINER: the caller needs
-- no DELETE on the feed tables, and cannot remove anything younger than 30 days.
CREATE FUNCTION subdata_purge_change_events(retention interval, max_commits integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  purged integer;
BEGIN
  IF retention < interval '30 days' THEN
    RAISE EXCEPTION 'the change feed keeps events at least 30 days, got %', retention
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  WITH doomed AS (
    SELECT merchant_id, position, xid FROM change_commits
     WHERE committed_at < clock_timestamp() - retention
     ORDER BY committed_at
     LIMIT max_commits
       FOR UPDATE SKIP LOCKED
  ), gone_events AS (
    DELETE FROM change_events e USING doomed d WHERE e.xid = d.xid AND e.merchant_id = d.merchant_id
  ), gone_commits AS (
    DELETE FROM change_commits c USING doomed d WHERE c.merchant_id = d.merchant_id AND c.position = d.position
    RETURNING c.merchant_id, c.position
  ), horizons AS (
    INSERT INTO change_feed_horizons (merchant_id, purged_through)
    SELECT merchant_id, max(position) FROM gone_commits GROUP BY merchant_id
    ON CONFLICT (merchant_id) DO UPDATE
      SET purged_through = greatest(change_feed_horizons.purged_through, excluded.purged_through)
  )
  SELECT count(*) INTO purged FROM gone_commits;
  RETURN purged;
END
$$;
REVOKE ALL ON FUNCTION subdata_purge_change_events(interval, integer) FROM PUBLIC;

-- The query service reads the feed; the relay (role subdata_webhook) runs its retention.
GRANT SELECT ON change_events, change_commits, change_feed_horizons TO subdata_query;
GRANT EXECUTE ON FUNCTION subdata_purge_change_events(interval, integer) TO subdata_webhook;

-- Down Migration

REVOKE EXECUTE ON FUNCTION subdata_purge_change_events(interval, integer) FROM subdata_webhook;
DROP FUNCTION subdata_purge_change_events(interval, integer);
DROP TRIGGER order_line_items_refuse_truncate ON order_line_items;
DROP TRIGGER orders_refuse_truncate ON orders;
DROP TRIGGER charges_refuse_truncate ON charges;
DROP FUNCTION subdata_refuse_truncate();
DROP TRIGGER order_line_items_touch_order ON order_line_items;
DROP FUNCTION order_line_items_touch_order();
DROP TRIGGER orders_capture_delete ON orders;
DROP TRIGGER orders_capture_change ON orders;
DROP FUNCTION orders_capture_change();
DROP TRIGGER charges_capture_change ON charges;
DROP FUNCTION charges_capture_change();
CREATE OR REPLACE FUNCTION subscriptions_capture_change() RETURNS trigger
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
  PERFORM pg_notify('subdata_outbox', '');
  RETURN NULL;
END
$$;
DROP FUNCTION subdata_record_change(text, text, text, text, bigint, jsonb, jsonb, jsonb);
DROP FUNCTION subdata_changed_columns(jsonb, jsonb);
DROP FUNCTION subdata_order_snapshot(orders);
DROP FUNCTION subdata_charge_snapshot(charges);
DROP TABLE change_feed_horizons, change_commits, change_events;
DROP FUNCTION change_events_take_position();
DROP SEQUENCE change_commit_position;
DROP TRIGGER orders_refuse_merchant_change ON orders;
DROP TRIGGER charges_refuse_merchant_change ON charges;
DROP TRIGGER subscriptions_refuse_merchant_change ON subscriptions;
DROP FUNCTION subdata_refuse_merchant_change();
DROP TRIGGER orders_stamp_version ON orders;
DROP TRIGGER charges_stamp_version ON charges;
DROP FUNCTION subdata_stamp_version();
DROP INDEX charges_merchant_keyset;
ALTER TABLE orders DROP COLUMN version;
ALTER TABLE charges DROP COLUMN version;
