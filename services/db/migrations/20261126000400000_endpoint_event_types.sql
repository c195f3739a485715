-- Up Migration

-- An endpoint's empty event_types means every event type: subscription, charge and order events.
-- Endpoints registered while it meant every subscription event are given that list explicitly, so each
-- keeps receiving exactly what it received.
UPDATE webhook_endpoints
   SET event_types = ARRAY['subscription.created', 'subscription.updated', 'subscription.deleted']
 WHERE cardinality(event_types) = 0;
COMMENT ON COLUMN webhook_endpoints.event_types IS
  'Public event type names (subscription.created, charge.updated, …); empty means every event type.';

-- Down Migration

COMMENT ON COLUMN webhook_endpoints.event_types IS NULL;
