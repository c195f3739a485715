-- Up Migration

-- The webhook ingest leader's lease (services/webhook/src/ingest/ingest-lease.ts): one row per
-- consumer. A replica leads while it renews the row within its TTL; a standby takes an expired row over
-- with the next epoch, and every batch the leader writes renews the row for its own epoch in the same
-- statement, so a leader that lost the lease (frozen, partitioned) writes nothing when it comes back.
CREATE TABLE webhook_ingest_leases (
  name       text PRIMARY KEY,
  holder     text NOT NULL,
  epoch      bigint NOT NULL CHECK (epoch > 0),
  expires_at timestamptz NOT NULL
);
GRANT SELECT, INSERT, UPDATE ON webhook_ingest_leases TO subdata_webhook;

-- Down Migration

DROP TABLE webhook_ingest_leases;
