-- Up Migration

-- No index whose columns lead a wider index of the same table: the wider one answers the same lookups,
-- and every index costs a write per row version and its space (test/schema.test.ts keeps it so).
--
-- webhook_deliveries: a delivery's updates are never HOT (the claim and the recording change indexed
-- columns), so each of its indexes is written at the insert, the claim and the record. The uniqueness
-- of (endpoint, event) moves to an index that leads with event_id, which also serves what
-- webhook_deliveries_event did: retention's "no delivery refers to this event" and the foreign key's
-- lookup on every delete of an event. Lookups by endpoint keep webhook_deliveries_endpoint. ON CONFLICT
-- (endpoint_id, event_id) infers the new index (the same columns, in any order). On a large
-- installation, create the index first by hand with CREATE UNIQUE INDEX CONCURRENTLY under the same
-- name and exactly these columns: this migration then skips the build (drop an invalid index left by
-- a failed concurrent build first; ADD CONSTRAINT refuses it).
CREATE UNIQUE INDEX IF NOT EXISTS webhook_deliveries_event_id_endpoint_id_key ON webhook_deliveries (event_id, endpoint_id);
ALTER TABLE webhook_deliveries
  ADD CONSTRAINT webhook_deliveries_event_id_endpoint_id_key UNIQUE USING INDEX webhook_deliveries_event_id_endpoint_id_key;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_endpoint_id_event_id_key;
DROP INDEX webhook_deliveries_event;

-- A merchant's customers and plans: (merchant_id, id), the tenant keys' unique constraints, lead with
-- merchant_id.
DROP INDEX customers_merchant;
DROP INDEX plans_merchant;

-- Down Migration

CREATE INDEX plans_merchant ON plans (merchant_id);
CREATE INDEX customers_merchant ON customers (merchant_id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_endpoint_id_event_id_key UNIQUE (endpoint_id, event_id);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_endpoint_id_key;
