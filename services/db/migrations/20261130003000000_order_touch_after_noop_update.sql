-- Up Migration

-- A line item that changes touches its order (version + 1, one order.updated at commit) unless this
-- transaction already changed the order, whose own event, taken at commit, carries the items anyway.
-- "Already changed" was judged by the row's xmin, which a no-op UPDATE of the order (setting a status
-- it already had) also sets, without a new version or an event: a line item added after it then
-- reached no reader at all. The order now records which transaction last gave it a version
-- (version_xid, kept out of its events and its API), and the touch asks that instead.
ALTER TABLE orders ADD COLUMN version_xid xid8;

CREATE FUNCTION orders_stamp_version() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.version := 1;
    NEW.version_xid := pg_current_xact_id();
    RETURN NEW;
  END IF;
  IF NEW IS NOT DISTINCT FROM OLD THEN
    RETURN NEW;
  END IF;
  NEW.version := OLD.version + 1;
  NEW.version_xid := pg_current_xact_id();
  IF NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at THEN
    NEW.updated_at := clock_timestamp();
  END IF;
  RETURN NEW;
END
$$;
DROP TRIGGER orders_stamp_version ON orders;
CREATE TRIGGER orders_stamp_version
  BEFORE INSERT OR UPDATE ON orders
  FOR EACH ROW EXECUTE FUNCTION orders_stamp_version();

CREATE OR REPLACE FUNCTION subdata_order_snapshot(o orders) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
  SELECT (to_jsonb(o) - 'version_xid') || jsonb_build_object(
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
                                  subdata_changed_columns(to_jsonb(NEW) - 'version_xid', to_jsonb(OLD) - 'version_xid'));
    RETURN NULL;
  END IF;
  PERFORM subdata_record_change('order', 'deleted', OLD.merchant_id, OLD.id, OLD.version,
                                subdata_order_snapshot(OLD), NULL, '[]'::jsonb);
  RETURN OLD;
END
$$;

CREATE OR REPLACE FUNCTION order_line_items_touch_order() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  item order_line_items := coalesce(NEW, OLD);
BEGIN
  UPDATE orders o SET updated_at = clock_timestamp()
   WHERE o.id = item.order_id AND o.merchant_id = item.merchant_id
     AND o.version_xid IS DISTINCT FROM pg_current_xact_id();
  IF TG_OP = 'UPDATE' AND (OLD.order_id, OLD.merchant_id) IS DISTINCT FROM (NEW.order_id, NEW.merchant_id) THEN
    UPDATE orders o SET updated_at = clock_timestamp()
     WHERE o.id = OLD.order_id AND o.merchant_id = OLD.merchant_id
       AND o.version_xid IS DISTINCT FROM pg_current_xact_id();
  END IF;
  RETURN NULL;
END
$$;

-- Down Migration

CREATE OR REPLACE FUNCTION order_line_items_touch_order() RETURNS trigger
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
DROP TRIGGER orders_stamp_version ON orders;
CREATE TRIGGER orders_stamp_version
  BEFORE INSERT OR UPDATE ON orders
  FOR EACH ROW EXECUTE FUNCTION subscriptions_stamp_version();
DROP FUNCTION orders_stamp_version();
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
CREATE OR REPLACE FUNCTION subdata_order_snapshot(o orders) RETURNS jsonb
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
ALTER TABLE orders DROP COLUMN version_xid;
