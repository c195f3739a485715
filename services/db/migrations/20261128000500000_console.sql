-- Up Migration

-- The console page (services/console, role subdata_console): portal sessions the app mints for one of
-- its users and one merchant, and the record of every change made in the page. Tokens are never
-- stored: only their SHA-256 hashes.

CREATE TABLE portal_sessions (
  id               text PRIMARY KEY DEFAULT subdata_new_id('ps'),
  merchant_id      text NOT NULL REFERENCES merchants (id),
  -- Who the app said the user was; subdata has no users of its own.
  user_id          text NOT NULL CHECK (length(user_id) BETWEEN 1 AND 200),
  user_name        text NOT NULL DEFAULT '' CHECK (length(user_name) <= 200),
  -- The one-time token of the link; cleared when the link is opened, so it cannot be opened twice.
  open_token_hash  bytea UNIQUE CHECK (octet_length(open_token_hash) = 32),
  open_by          timestamptz NOT NULL,
  -- The cookie's value, set when the link is opened.
  cookie_hash      bytea UNIQUE CHECK (octet_length(cookie_hash) = 32),
  created_at       timestamptz NOT NULL DEFAULT now(),
  expires_at       timestamptz NOT NULL,
  opened_at        timestamptz,
  revoked_at       timestamptz,
  CHECK (expires_at > created_at)
);
CREATE INDEX portal_sessions_merchant ON portal_sessions (merchant_id, created_at);

-- Every change made in the page, with the session and the user it was made by. A row is written before
-- the change is attempted (status started) and finished after, so a form submitted twice (a reload, a
-- double click) finds its row and is not applied again.
CREATE TABLE console_changes (
  id              text PRIMARY KEY DEFAULT subdata_new_id('cch'),
  merchant_id     text NOT NULL,
  session_id      text NOT NULL REFERENCES portal_sessions (id),
  user_id         text NOT NULL,
  user_name       text NOT NULL,
  -- e.g. api_key.create, webhook_endpoint.rotate_secret
  action          text NOT NULL,
  -- The key, endpoint or delivery changed ("key_…", "we_…"); set once known.
  target_id       text,
  idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 16 AND 64),
  -- started | succeeded | failed
  status          text NOT NULL DEFAULT 'started' CHECK (status IN ('started', 'succeeded', 'failed')),
  -- Non-secret details of the outcome (an error message, a count); never a key or a signing secret.
  detail          text NOT NULL DEFAULT '',
  created_at      timestamptz NOT NULL DEFAULT now(),
  finished_at     timestamptz,
  UNIQUE (session_id, idempotency_key)
);
CREATE INDEX console_changes_merchant ON console_changes (merchant_id, created_at, id);

DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'subdata_console') THEN
    CREATE ROLE subdata_console LOGIN;
  END IF;
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO subdata_console', current_database());
END
$$;
GRANT USAGE ON SCHEMA public TO subdata_console;
GRANT SELECT (id) ON merchants TO subdata_console;
GRANT SELECT, INSERT, UPDATE ON portal_sessions, console_changes TO subdata_console;

-- Down Migration

DROP TABLE console_changes;
DROP TABLE portal_sessions;
REVOKE ALL ON merchants FROM subdata_console;
REVOKE ALL ON SCHEMA public FROM subdata_console;
DO $$
BEGIN
  EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM subdata_console', current_database());
END
$$;
