-- Up Migration

-- Webhooks carry charge and order events as well as subscription events: the resource an event and a
-- delivery are about is any of them. Delivery order stays per (endpoint, resource) by version, exactly
-- as it was per (endpoint, subscription); resource ids carry their kind's prefix (sub_, ch_, ord_), so
-- one column keeps them apart. Renaming rewrites nothing, and the indexes follow their column.
ALTER TABLE webhook_events RENAME COLUMN subscription_id TO resource_id;
ALTER TABLE webhook_deliveries RENAME COLUMN subscription_id TO resource_id;

-- Down Migration

ALTER TABLE webhook_deliveries RENAME COLUMN resource_id TO subscription_id;
ALTER TABLE webhook_events RENAME COLUMN resource_id TO subscription_id;
