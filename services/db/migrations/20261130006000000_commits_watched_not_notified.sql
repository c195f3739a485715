-- Up Migration

-- No captured write notifies any more. A transaction that calls pg_notify takes Postgres's notify lock
-- before its commit record and keeps it until the record is flushed, so every captured write, of any
-- merchant, committed one at a time behind one WAL flush. The relay and the query service's long polls
-- now watch change_commits instead (services/events/src/commit-watcher.ts; docs/decisions.md,
-- "Commits are watched, not notified"): they read the position sequence, and the rows between two
-- readings by position. On a large installation, create the index first by hand with CREATE INDEX
-- CONCURRENTLY under the same name: this migration then skips it.
CREATE INDEX IF NOT EXISTS change_commits_position ON change_commits (position);

CREATE OR REPLACE FUNCTION change_events_take_position() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  written text := coalesce(current_setting('subdata.change_merchants', true), '');
  positioned text := coalesce(current_setting('subdata.positioned_merchants', true), '');
  pending text[];
  merchant text;
BEGIN
  IF written = positioned THEN
    RETURN NULL;
  END IF;
  SELECT array_agg(m ORDER BY hashtext(m), m) INTO pending
    FROM unnest(string_to_array(trim(BOTH ',' FROM written), ',')) m
   WHERE position(',' || m || ',' IN positioned) = 0;
  FOREACH merchant IN ARRAY coalesce(pending, '{}') LOOP
    -- Class 0x5344 ('SD') keeps these apart from other advisory locks; a hash collision between two
    -- merchants only makes them share a lock.
    PERFORM pg_advisory_xact_lock(21316, hashtext(merchant));
  END LOOP;
  FOREACH merchant IN ARRAY coalesce(pending, '{}') LOOP
    INSERT INTO change_commits (merchant_id, position, xid)
    VALUES (merchant, nextval('change_commit_position'), pg_current_xact_id());
  END LOOP;
  PERFORM set_config('subdata.positioned_merchants', written, true);
  RETURN NULL;
END
$$;

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
  -- The relay publishes it to JetStream for webhooks; it sees the commit through change_commits.
  INSERT INTO event_outbox (id, merchant_id, resource_id) VALUES (new_id, merchant, resource);
END
$$;

-- The watchers: the query service (subdata_query, which reads the feed already) and the relay
-- (subdata_webhook) read the sequence, and the relay the two columns a wake-up needs.
GRANT SELECT ON SEQUENCE change_commit_position TO subdata_query, subdata_webhook;
GRANT SELECT (position, merchant_id) ON change_commits TO subdata_webhook;

-- Down Migration

REVOKE SELECT (position, merchant_id) ON change_commits FROM subdata_webhook;
REVOKE SELECT ON SEQUENCE change_commit_position FROM subdata_query, subdata_webhook;
CREATE OR REPLACE FUNCTION change_events_take_position() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  written text := coalesce(current_setting('subdata.change_merchants', true), '');
  positioned text := coalesce(current_setting('subdata.positioned_merchants', true), '');
  pending text[];
  merchant text;
BEGIN
  IF written = positioned THEN
    RETURN NULL;
  END IF;
  SELECT array_agg(m ORDER BY hashtext(m), m) INTO pending
    FROM unnest(string_to_array(trim(BOTH ',' FROM written), ',')) m
   WHERE position(',' || m || ',' IN positioned) = 0;
  FOREACH merchant IN ARRAY coalesce(pending, '{}') LOOP
    -- Class 0x5344 ('SD') keeps these apart from other advisory locks; a hash collision between two
    -- merchants only makes them share a lock.
    PERFORM pg_advisory_xact_lock(21316, hashtext(merchant));
  END LOOP;
  FOREACH merchant IN ARRAY coalesce(pending, '{}') LOOP
    INSERT INTO change_commits (merchant_id, position, xid)
    VALUES (merchant, nextval('change_commit_position'), pg_current_xact_id());
    -- Wakes the feed's long polls at commit; the payload names the merchant only.
    PERFORM pg_notify('subdata_changes', merchant);
  END LOOP;
  PERFORM set_config('subdata.positioned_merchants', written, true);
  RETURN NULL;
END
$$;
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

DROP INDEX change_commits_position;
