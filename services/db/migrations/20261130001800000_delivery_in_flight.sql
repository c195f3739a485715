-- Up Migration

-- A delivery is in flight from its claim until its attempt is recorded: claimed_until is the claim's
-- lease (set by the claim, cleared by the recorder; a worker that died leaves it to expire). Claims
-- count the in-flight rows of every replica by merchant and endpoint to keep both under their caps
-- (services/webhook/src/delivery/claim-repository.ts). Only in-flight rows are in the index, so
-- counting reads at most the deliveries in flight across the cluster, whatever the backlog.
ALTER TABLE webhook_deliveries ADD COLUMN claimed_until timestamptz;
CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries (merchant_id, endpoint_id, claimed_until)
  WHERE status = 'PENDING' AND claimed_until IS NOT NULL;

-- Down Migration

DROP INDEX webhook_deliveries_in_flight;
ALTER TABLE webhook_deliveries DROP COLUMN claimed_until;
