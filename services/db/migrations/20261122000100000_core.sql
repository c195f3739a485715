-- Up Migration

-- The merchant's subscription data: merchants, customers, plans, subscriptions, charges, orders.
-- Money is always integer minor units plus an ISO 4217 currency code, never a float.
-- Timestamps are timestamptz (microseconds); keyset cursors carry them exactly, never via a JS Date.

CREATE FUNCTION subdata_new_id(prefix text) RETURNS text
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$ SELECT prefix || '_' || replace(gen_random_uuid()::text, '-', '') $$;

CREATE TABLE merchants (
  id          text PRIMARY KEY DEFAULT subdata_new_id('mer'),
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE customers (
  id          text PRIMARY KEY DEFAULT subdata_new_id('cus'),
  merchant_id text NOT NULL REFERENCES merchants (id),
  email       text NOT NULL,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX customers_merchant ON customers (merchant_id);

CREATE TYPE plan_interval AS ENUM ('DAY', 'WEEK', 'MONTH', 'YEAR');

CREATE TABLE plans (
  id             text PRIMARY KEY DEFAULT subdata_new_id('plan'),
  merchant_id    text NOT NULL REFERENCES merchants (id),
  name           text NOT NULL,
  interval       plan_interval NOT NULL,
  interval_count integer NOT NULL CHECK (interval_count > 0),
  price_minor    bigint NOT NULL CHECK (price_minor >= 0),
  currency       char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX plans_merchant ON plans (merchant_id);

CREATE TYPE subscription_status AS ENUM ('ACTIVE', 'TRIALING', 'PAST_DUE', 'PAUSED', 'CANCELLED', 'EXPIRED');

CREATE TABLE subscriptions (
  id                   text PRIMARY KEY DEFAULT subdata_new_id('sub'),
  merchant_id          text NOT NULL REFERENCES merchants (id),
  customer_id          text NOT NULL REFERENCES customers (id),
  plan_id              text NOT NULL REFERENCES plans (id),
  status               subscription_status NOT NULL,
  price_minor          bigint NOT NULL CHECK (price_minor >= 0),
  currency             char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  quantity             integer NOT NULL DEFAULT 1 CHECK (quantity > 0),
  current_period_start timestamptz NOT NULL,
  current_period_end   timestamptz NOT NULL,
  next_charge_at       timestamptz,
  trial_ends_at        timestamptz,
  paused_at            timestamptz,
  cancelled_at         timestamptz,
  cancellation_reason  text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  version              bigint NOT NULL DEFAULT 1
);
-- Keyset reads: (merchant, created_at, id) for all, (merchant, status, created_at, id) filtered by status.
CREATE INDEX subscriptions_merchant_keyset ON subscriptions (merchant_id, created_at, id);
CREATE INDEX subscriptions_merchant_status_keyset ON subscriptions (merchant_id, status, created_at, id);

-- version is the database's, not the writer's: every real change bumps it by exactly one, whoever
-- writes (the app, a migration, psql). A no-op UPDATE (nothing differs) changes nothing.
CREATE FUNCTION subscriptions_stamp_version() RETURNS trigger
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
  IF NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at THEN
    NEW.updated_at := clock_timestamp();
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER subscriptions_stamp_version
  BEFORE INSERT OR UPDATE ON subscriptions
  FOR EACH ROW EXECUTE FUNCTION subscriptions_stamp_version();

CREATE TYPE charge_status AS ENUM ('PENDING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'REFUNDED', 'PARTIALLY_REFUNDED');

CREATE TABLE charges (
  id                    text PRIMARY KEY DEFAULT subdata_new_id('ch'),
  merchant_id           text NOT NULL REFERENCES merchants (id),
  subscription_id       text NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
  status                charge_status NOT NULL,
  amount_minor          bigint NOT NULL CHECK (amount_minor >= 0),
  amount_refunded_minor bigint NOT NULL DEFAULT 0 CHECK (amount_refunded_minor >= 0 AND amount_refunded_minor <= amount_minor),
  currency              char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  -- No foreign key: orders reference charges, and an order is created after its charge.
  order_id              text,
  failure_code          text,
  failure_message       text,
  scheduled_at          timestamptz NOT NULL,
  processed_at          timestamptz,
  created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX charges_merchant_subscription ON charges (merchant_id, subscription_id, created_at, id);

CREATE TYPE order_status AS ENUM ('PAID', 'FULFILLED', 'CANCELLED', 'REFUNDED');

CREATE TABLE orders (
  id              text PRIMARY KEY DEFAULT subdata_new_id('ord'),
  merchant_id     text NOT NULL REFERENCES merchants (id),
  subscription_id text NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
  charge_id       text REFERENCES charges (id) ON DELETE SET NULL,
  number          bigint NOT NULL,
  status          order_status NOT NULL,
  currency        char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  subtotal_minor  bigint NOT NULL,
  discount_minor  bigint NOT NULL DEFAULT 0,
  shipping_minor  bigint NOT NULL DEFAULT 0,
  tax_minor       bigint NOT NULL DEFAULT 0,
  total_minor     bigint NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (merchant_id, number)
);
CREATE INDEX orders_merchant_keyset ON orders (merchant_id, created_at, id);
CREATE INDEX orders_merchant_subscription_keyset ON orders (merchant_id, subscription_id, created_at, id);

CREATE TABLE order_line_items (
  order_id         text NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
  position         integer NOT NULL,
  merchant_id      text NOT NULL REFERENCES merchants (id),
  sku              text NOT NULL,
  title            text NOT NULL,
  quantity         integer NOT NULL CHECK (quantity > 0),
  unit_price_minor bigint NOT NULL,
  total_minor      bigint NOT NULL,
  PRIMARY KEY (order_id, position)
);

-- Least privilege. Roles are cluster-wide, so they are created only when missing (an operator may
-- pre-create them, with passwords, where the migrating user lacks CREATEROLE). Grants are per database.
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'subdata_query') THEN
    CREATE ROLE subdata_query LOGIN;
    -- Belt and braces: even a bug that tried to write would hit a read-only transaction.
    ALTER ROLE subdata_query SET default_transaction_read_only = on;
  END IF;
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO subdata_query', current_database());
END
$$;
GRANT USAGE ON SCHEMA public TO subdata_query;
-- The query service reads; it can do nothing else, here or in any table added later.
GRANT SELECT ON merchants, customers, plans, subscriptions, charges, orders, order_line_items TO subdata_query;

-- Down Migration

DROP TABLE order_line_items, orders, charges, subscriptions, plans, customers, merchants;
DROP FUNCTION subscriptions_stamp_version();
DROP TYPE order_status, charge_status, subscription_status, plan_interval;
DROP FUNCTION subdata_new_id(text);
