-- Up Migration

-- Webhook endpoints, the events they are owed, durable deliveries and every attempt. Owned by the
-- webhook service (role subdata_webhook). Retries are scheduled here, in Postgres, not in JetStream:
-- a receiver that stays down must not hold messages in the consumer's ack-pending window.

CREATE TYPE webhook_endpoint_status AS ENUM ('ENABLED', 'DISABLED');

CREATE TABLE webhook_endpoints (
  id                          text PRIMARY KEY DEFAULT subdata_new_id('we'),
  merchant_id                 text NOT NULL REFERENCES merchants (id),
  url                         text NOT NULL,
  description                 text NOT NULL DEFAULT '',
  -- Public event type names ('subscription.created', …); empty means every subscription event.
  event_types                 text[] NOT NULL DEFAULT '{}',
  status                      webhook_endpoint_status NOT NULL DEFAULT 'ENABLED',
  disabled_reason             text,
  -- Signing secrets, AES-256-GCM sealed with SUBDATA_WEBHOOK_SECRET_KEY (see secret-box.ts); never plaintext.
  secret_ciphertext           bytea NOT NULL,
  previous_secret_ciphertext  bytea,
  previous_secret_expires_at  timestamptz,
  -- First failed attempt since the last success: after 5 days without a 2xx the endpoint is disabled.
  failing_since               timestamptz,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_merchant ON webhook_endpoints (merchant_id, created_at, id);

-- One row per event the webhook service consumed: the exact body it sends, so every attempt, resend
-- and replay of an event carries the same bytes and the same webhook-id.
CREATE TABLE webhook_events (
  id              text PRIMARY KEY,
  merchant_id     text NOT NULL,
  subscription_id text NOT NULL,
  type            text NOT NULL,
  version         bigint NOT NULL,
  occurred_at     timestamptz NOT NULL,
  body            text NOT NULL,
  received_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_events_merchant_time ON webhook_events (merchant_id, occurred_at, id);

CREATE TYPE webhook_delivery_status AS ENUM ('PENDING', 'SUCCEEDED', 'FAILED', 'CANCELLED');

-- The durable promise "this endpoint is owed this event": unique per (endpoint, event).
CREATE TABLE webhook_deliveries (
  id              text PRIMARY KEY DEFAULT subdata_new_id('whd'),
  merchant_id     text NOT NULL,
  endpoint_id     text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id        text NOT NULL REFERENCES webhook_events (id),
  subscription_id text NOT NULL,
  version         bigint NOT NULL,
  status          webhook_delivery_status NOT NULL DEFAULT 'PENDING',
  attempt_count   integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_attempt_at timestamptz,
  delivered_at    timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, event_id)
);
-- Workers claim due deliveries by time…
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'PENDING';
-- …but only the lowest pending version per (endpoint, subscription), to keep per-subscription order.
CREATE INDEX webhook_deliveries_pending_order ON webhook_deliveries (endpoint_id, subscription_id, version) WHERE status = 'PENDING';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at, id);

CREATE TABLE webhook_attempts (
  id              text PRIMARY KEY DEFAULT subdata_new_id('wha'),
  delivery_id     text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  merchant_id     text NOT NULL,
  attempt_number  integer NOT NULL,
  started_at      timestamptz NOT NULL,
  latency_micros  bigint NOT NULL,
  -- NULL when no HTTP response arrived (timeout, refused, blocked address…).
  response_status integer,
  error_class     text NOT NULL,
  -- The first 20 KB of the response body.
  response_body   text NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, started_at, id);

DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'subdata_webhook') THEN
    CREATE ROLE subdata_webhook LOGIN;
  END IF;
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO subdata_webhook', current_database());
END
$$;
GRANT USAGE ON SCHEMA public TO subdata_webhook;
GRANT SELECT ON merchants TO subdata_webhook;
GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoints TO subdata_webhook;
GRANT SELECT, INSERT ON webhook_events TO subdata_webhook;
GRANT SELECT, INSERT, UPDATE ON webhook_deliveries TO subdata_webhook;
GRANT SELECT, INSERT ON webhook_attempts TO subdata_webhook;

-- Down Migration

DROP TABLE webhook_attempts, webhook_deliveries, webhook_events, webhook_endpoints;
DROP TYPE webhook_delivery_status, webhook_endpoint_status;
