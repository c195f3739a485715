-- Up Migration

-- API keys, the audit log of public API reads, and the security log of failed authentications.
-- Owned by the auth service (role subdata_auth). A key is never stored: only its SHA-256 hash and a
-- non-secret display prefix ("sds_AbCd").

CREATE TABLE api_keys (
  id             text PRIMARY KEY DEFAULT subdata_new_id('key'),
  merchant_id    text NOT NULL REFERENCES merchants (id),
  name           text NOT NULL DEFAULT '',
  display_prefix text NOT NULL,
  -- SHA-256 of the whole key: authentication is one indexed lookup by this value.
  key_hash       bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
  created_at     timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz,
  revoked_at     timestamptz,
  -- Approximate: written at most once a minute per key.
  last_used_at   timestamptz
);
-- ListApiKeys reads newest first by keyset over (created_at, id) within a merchant.
CREATE INDEX api_keys_merchant_keyset ON api_keys (merchant_id, created_at, id);

-- Append-only. No foreign keys on purpose: rows are written in group-committed batches, and one row
-- failing a constraint would fail every caller of its batch; the service validates instead. History
-- must also outlive any later cleanup of merchants or keys.
CREATE TABLE audit_events (
  id             text PRIMARY KEY,
  occurred_at    timestamptz NOT NULL,
  merchant_id    text NOT NULL,
  api_key_id     text NOT NULL,
  request_id     text NOT NULL,
  method         text NOT NULL,
  route          text NOT NULL,
  query          text NOT NULL,
  resource_ids   text[] NOT NULL,
  result_count   integer NOT NULL,
  status         integer NOT NULL,
  -- text, not inet: whatever the edge saw must never make the batch's INSERT fail.
  client_ip      text NOT NULL,
  user_agent     text NOT NULL,
  latency_micros bigint NOT NULL
);
CREATE INDEX audit_events_merchant_keyset ON audit_events (merchant_id, occurred_at, id);
CREATE INDEX audit_events_merchant_key_keyset ON audit_events (merchant_id, api_key_id, occurred_at, id);

-- Even the owner (or a superuser at a psql prompt) cannot change history by accident: UPDATE, DELETE
-- and TRUNCATE raise. Deliberate removal needs ALTER TABLE … DISABLE TRIGGER, which is visible.
CREATE FUNCTION audit_events_refuse_change() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_events_no_update_delete
  BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();
CREATE TRIGGER audit_events_no_truncate
  BEFORE TRUNCATE ON audit_events
  FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse_change();

-- Failed authentications. Never the presented key: only its display prefix when it was well-formed.
CREATE TABLE security_events (
  id          text PRIMARY KEY DEFAULT subdata_new_id('sec'),
  occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- malformed | bad_checksum | unknown | revoked | expired
  reason      text NOT NULL,
  key_prefix  text,
  -- Set when the key was recognised (revoked, expired).
  api_key_id  text,
  client_ip   text NOT NULL,
  user_agent  text NOT NULL,
  request_id  text NOT NULL
);
CREATE INDEX security_events_occurred ON security_events (occurred_at, id);

DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'subdata_auth') THEN
    CREATE ROLE subdata_auth LOGIN;
  END IF;
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO subdata_auth', current_database());
END
$$;
GRANT USAGE ON SCHEMA public TO subdata_auth;
GRANT SELECT ON merchants TO subdata_auth;
GRANT SELECT, INSERT, UPDATE ON api_keys TO subdata_auth;
-- Logs: append and read, nothing else, for every role.
REVOKE ALL ON audit_events, security_events FROM PUBLIC;
GRANT SELECT, INSERT ON audit_events, security_events TO subdata_auth;

-- Down Migration

DROP TABLE security_events;
DROP TABLE audit_events;
DROP FUNCTION audit_events_refuse_change();
DROP TABLE api_keys;
REVOKE SELECT ON merchants FROM subdata_auth;
