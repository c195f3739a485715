import pg from "pg";
import { migrate } from "@subdata/db";
import { claimDueDeliveries } from "@subdata/webhook/delivery-claim-repository";

const base = "postgres://postgres@127.0.0.1:5432";
const dbName = "whclaim_scratch";
const subs = Number(process.argv[2] ?? 1000);
const versions = Number(process.argv[3] ?? 50);
const scenario = process.argv[4] ?? "fresh"; // fresh | inflight | dead
const admin = new pg.Client({ connectionString: `${base}/postgres` });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${dbName}`);
await admin.query(`CREATE DATABASE ${dbName}`);
await admin.end();
const url = `${base}/${dbName}`;
await migrate({ databaseUrl: url });
const db = new pg.Pool({ connectionString: url, max: 2 });
await db.query("INSERT INTO merchants (id, name) VALUES ('mer_x', 'x')").catch(async (e) => { console.log(e.message); });
await db.query("INSERT INTO webhook_endpoints (id, merchant_id, url, secret_ciphertext) VALUES ('we_a','mer_x','http://a', '\\x00'), ('we_b','mer_x','http://b','\\x00')");
await db.query(`WITH ev AS (
  INSERT INTO webhook_events (id, merchant_id, subscription_id, type, version, occurred_at, body)
  SELECT format('evt_%s_%s', s, v), 'mer_x', format('sub_%s', s), 't', v, now(), '{}'
    FROM generate_series(1, $2::int) v, generate_series(1, $1::int) s ORDER BY v, s RETURNING id, subscription_id, version)
  INSERT INTO webhook_deliveries (merchant_id, endpoint_id, event_id, subscription_id, version, next_attempt_at)
  SELECT 'mer_x', 'we_a', id, subscription_id, version, now() - interval '1 minute' FROM ev ORDER BY version, subscription_id`, [subs, versions]);
if (scenario === "inflight" || scenario === "dead") {
  // heads in flight (lease) or retrying far in the future
  await db.query(`UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour', attempt_count = 1 WHERE version = 1`);
}
if (scenario === "dead") await db.query("UPDATE webhook_endpoints SET failing_since = now() WHERE id = 'we_a'");
await db.query("VACUUM ANALYZE webhook_deliveries");
const client = await db.connect();
const fake = {
  query: async (sql: string, params: unknown[]) => {
    await client.query("BEGIN");
    const t = performance.now();
    const r = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
    const ms = performance.now() - t;
    await client.query("ROLLBACK");
    console.log(r.rows.map((row) => row["QUERY PLAN"]).join("\n"));
    console.log(`client-side ${ms.toFixed(1)} ms`);
    return { rows: [] };
  },
};
for (let i = 0; i < 2; i++)
  await claimDueDeliveries(fake as never, { limit: 64, healthyCap: 32, failingCap: 4, inFlight: new Map(), fullEndpointIds: [], leaseMs: 30000, scanLimit: 256 });
client.release();
await db.end();
