-- Up Migration

-- The outbox references the feed. Every change_events row — subscriptions, charges and orders — gets an
-- event_outbox row with the same id in the same transaction, and the relay reads the event itself from
-- change_events. The outbox keeps only what publishing needs: its order (seq), the resource (a
-- resource's events are published in order), and the publishing state. Rows written before this
-- migration keep working: the feed's migration copied every outbox row into change_events under its id.

ALTER TABLE event_outbox RENAME COLUMN subscription_id TO resource_id;
ALTER INDEX event_outbox_pending_subscription RENAME TO event_outbox_pending_resource;
-- The event_type CHECK goes with its column.
ALTER TABLE event_outbox
  DROP COLUMN event_type,
  DROP COLUMN version,
  DROP COLUMN occurred_at,
  DROP COLUMN payload,
  ALTER COLUMN id DROP DEFAULT,
  -- If retention ever removed an event still waiting here (a relay down for longer than the feed keeps
  -- events), the row goes with it: there is nothing left to publish.
  ADD CONSTRAINT event_outbox_event FOREIGN KEY (id) REFERENCES change_events (id) ON DELETE CASCADE;

CREATE OR REPLACE FUNCTION subdata_record_change(
  kind text, operation text, merchant text, resource text, resource_version bigint,
  snapshot jsonb, previous jsonb, changed jsonb
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  new_id text;
  merchants text;
BEGIN
  INSERT INTO change_events (merchant_id, resource_type, resource_id, event_type, version, payload)
  VALUES (merchant, kind, resource, kind || '.' || operation, resource_version,
          jsonb_build_object('object', snapshot, 'previous',
                             (SELECT jsonb_object_agg(p.key, p.value) FROM jsonb_each(previous) p
                               WHERE p.value IS DISTINCT FROM snapshot -> p.key),
                             'changed_columns', changed))
  RETURNING change_events.id INTO new_id;
  -- The merchants this transaction wrote events for, as ",a,b," (read at commit by change_events_take_position).
  merchants := coalesce(nullif(current_setting('subdata.change_merchants', true), ''), ',');
  IF position(',' || merchant || ',' IN merchants) = 0 THEN
    PERFORM set_config('subdata.change_merchants', merchants || merchant || ',', true);
  END IF;
  -- The relay publishes it to JetStream for webhooks; the notification wakes it at commit.
  INSERT INTO event_outbox (id, merchant_id, resource_id) VALUES (new_id, merchant, resource);
  PERFORM pg_notify('subdata_outbox', '');
END
$$;

-- The relay (role subdata_webhook) reads each claimed row's event.
GRANT SELECT ON change_events TO subdata_webhook;

-- Down Migration

REVOKE SELECT ON change_events FROM subdata_webhook;
CREATE OR REPLACE FUNCTION subdata_record_change(
  kind text, operation text, merchant text, resource text, resource_version bigint,
  snapshot jsonb, previous jsonb, changed jsonb
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  new_type text := kind || '.' || operation;
  new_id text;
  new_time timestamptz;
  merchants text;
BEGIN
  INSERT INTO change_events (merchant_id, resource_type, resource_id, event_type, version, payload)
  VALUES (merchant, kind, resource, new_type, resource_version,
          jsonb_build_object('object', snapshot, 'previous',
                             (SELECT jsonb_object_agg(p.key, p.value) FROM jsonb_each(previous) p
                               WHERE p.value IS DISTINCT FROM snapshot -> p.key),
                             'changed_columns', changed))
  RETURNING change_events.id, change_events.occurred_at INTO new_id, new_time;
  merchants := coalesce(nullif(current_setting('subdata.change_merchants', true), ''), ',');
  IF position(',' || merchant || ',' IN merchants) = 0 THEN
    PERFORM set_config('subdata.change_merchants', merchants || merchant || ',', true);
  END IF;
  IF kind = 'subscription' THEN
    INSERT INTO event_outbox (id, merchant_id, subscription_id, event_type, version, occurred_at, payload)
    VALUES (new_id, merchant, resource, new_type, resource_version, new_time,
            jsonb_build_object('subscription', snapshot, 'previous', previous, 'changed_columns', changed));
    PERFORM pg_notify('subdata_outbox', '');
  END IF;
END
$$;
-- Charge and order events were never in the older outbox.
DELETE FROM event_outbox o USING change_events e WHERE e.id = o.id AND e.resource_type <> 'subscription';
ALTER TABLE event_outbox
  DROP CONSTRAINT event_outbox_event,
  ALTER COLUMN id SET DEFAULT subdata_new_id('evt'),
  ADD COLUMN event_type text,
  ADD COLUMN version bigint,
  ADD COLUMN occurred_at timestamptz DEFAULT clock_timestamp(),
  ADD COLUMN payload jsonb;
UPDATE event_outbox o
   SET event_type = e.event_type, version = e.version, occurred_at = e.occurred_at,
       payload = jsonb_build_object('subscription', e.payload -> 'object',
                                    'previous', CASE WHEN e.payload -> 'previous' = 'null'::jsonb THEN NULL
                                                     ELSE (e.payload -> 'object') || (e.payload -> 'previous') END,
                                    'changed_columns', e.payload -> 'changed_columns')
  FROM change_events e
 WHERE e.id = o.id;
ALTER TABLE event_outbox
  ALTER COLUMN event_type SET NOT NULL,
  ALTER COLUMN version SET NOT NULL,
  ALTER COLUMN occurred_at SET NOT NULL,
  ALTER COLUMN payload SET NOT NULL,
  ADD CONSTRAINT event_outbox_event_type_check
    CHECK (event_type IN ('subscription.created', 'subscription.updated', 'subscription.deleted'));
ALTER INDEX event_outbox_pending_resource RENAME TO event_outbox_pending_subscription;
ALTER TABLE event_outbox RENAME COLUMN resource_id TO subscription_id;
