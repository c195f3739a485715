-- Up Migration

-- SummarizeDeliveries (the console's 24-hour chart of an endpoint) reads the attempts of one endpoint
-- that started in the last 24 hours. Attempts carry no endpoint, so the read finds the endpoint's
-- deliveries attempted since then (last_attempt_at is set when an attempt is claimed, before it starts)
-- and each one's attempts through webhook_attempts_delivery: rows of that window only, however long
-- the endpoint has existed. On a large existing installation, create it first by hand with CREATE
-- INDEX CONCURRENTLY under the same name, and this migration skips it (IF NOT EXISTS).
CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint_attempted ON webhook_deliveries (endpoint_id, last_attempt_at)
  WHERE last_attempt_at IS NOT NULL;

-- Down Migration

DROP INDEX webhook_deliveries_endpoint_attempted;
