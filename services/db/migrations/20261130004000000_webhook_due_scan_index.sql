-- Up Migration

-- The claim's walk of due deliveries gets an index whose predicate only that walk implies: its
-- "next_attempt_at <= now()" implies "next_attempt_at IS NOT NULL" (a NOT NULL column, so the index holds
-- exactly the pending rows, as webhook_deliveries_due_order did). Under the same predicate as the other
-- partial indexes of pending rows (status = 'PENDING'), the per-row probes for a group's lowest pending
-- version could walk this index from end to end: statistics taken while nearly every row was delivered
-- make every partial index of pending rows look equally cheap when a backlog arrives (10.2 million rows
-- read by one claim over a backlog of 20,000; test/webhook-delivery/claim-plans.test.ts). Statements of
-- the release before this one read the new index for their walk too. On a large installation, create it
-- first by hand with CREATE INDEX CONCURRENTLY under the same name: this migration then skips it.
CREATE INDEX IF NOT EXISTS webhook_deliveries_due_scan ON webhook_deliveries (next_attempt_at, id)
  WHERE status = 'PENDING' AND next_attempt_at IS NOT NULL;
DROP INDEX webhook_deliveries_due_order;

-- Down Migration

CREATE INDEX webhook_deliveries_due_order ON webhook_deliveries (next_attempt_at, id) WHERE status = 'PENDING';
DROP INDEX webhook_deliveries_due_scan;
