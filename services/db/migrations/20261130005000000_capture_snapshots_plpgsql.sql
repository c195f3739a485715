-- Up Migration

-- The capture triggers' helpers, in PL/pgSQL with the same bodies. Called from a trigger, a LANGUAGE sql
-- function that is not inlined (anything more than a bare expression, or a SET clause) has its statement
-- parsed and planned on every call, while PL/pgSQL keeps its plans for the session: an UPDATE of 1,000
-- subscriptions took 538–552 ms with the SQL helpers and 292–305 ms with these (docs/decisions.md, "The
-- change feed's order is commit order"). The payloads are the same bytes.

CREATE OR REPLACE FUNCTION subdata_subscription_snapshot(s subscriptions) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
BEGIN
  RETURN to_jsonb(s) || jsonb_build_object(
    'price_minor', s.price_minor::text,
    'version', s.version::text,
    'customer', (SELECT jsonb_build_object('id', c.id, 'email', c.email, 'name', c.name)
                   FROM customers c WHERE c.id = s.customer_id),
    'plan', (SELECT jsonb_build_object('id', p.id, 'name', p.name, 'interval', p.interval, 'interval_count', p.interval_count)
               FROM plans p WHERE p.id = s.plan_id));
END
$$;

CREATE OR REPLACE FUNCTION subdata_charge_snapshot(c charges) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
BEGIN
  RETURN to_jsonb(c) || jsonb_build_object(
    'amount_minor', c.amount_minor::text,
    'amount_refunded_minor', c.amount_refunded_minor::text,
    'version', c.version::text);
END
$$;

CREATE OR REPLACE FUNCTION subdata_order_snapshot(o orders) RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
BEGIN
  RETURN (to_jsonb(o) - 'version_xid') || jsonb_build_object(
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
       WHERE li.order_id = o.id AND li.merchant_id = o.merchant_id), '[]'::jsonb));
END
$$;

-- The columns whose values differ between two versions of a row, sorted.
CREATE OR REPLACE FUNCTION subdata_changed_columns(new_row jsonb, old_row jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(n.key ORDER BY n.key), '[]'::jsonb)
            FROM jsonb_each(new_row) n
            JOIN jsonb_each(old_row) o ON o.key = n.key
           WHERE n.value IS DISTINCT FROM o.value);
END
$$;

-- Down Migration

CREATE OR REPLACE FUNCTION subdata_subscription_snapshot(s subscriptions) RETURNS jsonb
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

CREATE OR REPLACE FUNCTION subdata_charge_snapshot(c charges) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
SET TimeZone = 'UTC'
AS $$
  SELECT to_jsonb(c) || jsonb_build_object(
    'amount_minor', c.amount_minor::text,
    'amount_refunded_minor', c.amount_refunded_minor::text,
    'version', c.version::text)
$$;

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

CREATE OR REPLACE FUNCTION subdata_changed_columns(new_row jsonb, old_row jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
  SELECT coalesce(jsonb_agg(n.key ORDER BY n.key), '[]'::jsonb)
    FROM jsonb_each(new_row) n
    JOIN jsonb_each(old_row) o ON o.key = n.key
   WHERE n.value IS DISTINCT FROM o.value
$$;
