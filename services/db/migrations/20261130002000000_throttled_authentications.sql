-- Up Migration

-- Authentication attempts a gateway answered 429 without asking the auth service (the client address
-- had used up its failed-authentication budget) are kept in the security log as one row per client
-- address and window, with how many there were, not one row per request: an attacker hammering at
-- the limit cannot grow the table faster than one row per window. occurred_at is the window's start;
-- reports of the same address and window (gateway replicas) add up into the one row.
ALTER TABLE security_events ADD COLUMN attempts integer NOT NULL DEFAULT 1 CHECK (attempts >= 1);
CREATE UNIQUE INDEX security_events_throttled_window ON security_events (client_ip, occurred_at) WHERE reason = 'throttled';
GRANT UPDATE (attempts) ON security_events TO subdata_auth;

-- Down Migration

REVOKE UPDATE (attempts) ON security_events FROM subdata_auth;
DROP INDEX security_events_throttled_window;
DELETE FROM security_events WHERE reason = 'throttled';
ALTER TABLE security_events DROP COLUMN attempts;
