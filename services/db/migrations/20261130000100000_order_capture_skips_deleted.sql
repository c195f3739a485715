-- Up Migration

-- An order's create and update events are taken at commit (a deferred trigger), its delete event at
-- once (BEFORE DELETE, while its line items still exist). When one transaction writes an order and
-- then deletes it — directly, or by deleting its subscription, whose cascade first sets the order's
-- charge_id to NULL (an UPDATE) and then deletes it — the deferred create or update would fire at
-- commit, after the delete was recorded, and put the order back for every reader of the feed with its
-- line items already gone. At commit, an order that no longer exists gets no create or update: its
-- delete is its last event, as it is the last thing that happened to it.
CREATE OR REPLACE FUNCTION orders_capture_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
BEGIN
  IF TG_OP = 'INSERT' OR TG_OP = 'UPDATE' THEN
    IF NOT EXISTS (SELECT FROM orders WHERE id = NEW.id) THEN
      RETURN NULL;
    END IF;
  END IF;
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

-- Down Migration

CREATE OR REPLACE FUNCTION orders_capture_change() RETURNS trigger
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
