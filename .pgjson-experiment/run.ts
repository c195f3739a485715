// Throw-away experiment (deleted after): JS rendering from rows vs Postgres building the JSON.
import { readFileSync } from "node:fs";
import currencyCodes from "currency-codes";
import { createPool } from "@subdata/runtime";
import { createSubscriptionRepository } from "@subdata/query";
import { jsonArray, subscriptionJson } from "@subdata/query/public-json";

const url = "postgres://postgres@127.0.0.1:5432/subdata_bench_s100000_m100";
const pool = createPool({ connectionString: url, max: 1 } as never);
const repo = createSubscriptionRepository(pool);
const digits = JSON.stringify(Object.fromEntries(currencyCodes.data.map((r) => [r.code, r.digits])));
const ts = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const money = (col: string) => `round(${col}::numeric / power(10::numeric, d.digits), d.digits)::text`;
const SQL = `SELECT s.id, s.created_at, (SELECT row_to_json(j) FROM (SELECT s.id, 'subscription' AS object, s.status,
   (SELECT row_to_json(x) FROM (SELECT s.customer_id AS id, c.email, c.name) x) AS customer,
   (SELECT row_to_json(x) FROM (SELECT s.plan_id AS id, p.name, p.interval, p.interval_count) x) AS plan,
   (SELECT row_to_json(x) FROM (SELECT ${money("s.price_minor")} AS amount, s.currency) x) AS price,
   s.quantity, ${ts("s.current_period_start")} AS current_period_start, ${ts("s.current_period_end")} AS current_period_end,
   ${ts("s.next_charge_at")} AS next_charge_at, ${ts("s.trial_ends_at")} AS trial_ends_at, ${ts("s.paused_at")} AS paused_at,
   ${ts("s.cancelled_at")} AS cancelled_at, s.cancellation_reason, ${ts("s.created_at")} AS created_at, ${ts("s.updated_at")} AS updated_at,
   s.version) j)::text AS public_json
 FROM (SELECT * FROM subscriptions s WHERE s.merchant_id = $1 AND s.status = $2::subscription_status ORDER BY s.created_at, s.id LIMIT $3) s
 LEFT JOIN customers c ON c.id = s.customer_id AND c.merchant_id = $1
 LEFT JOIN plans p ON p.id = s.plan_id AND p.merchant_id = $1
 CROSS JOIN LATERAL (SELECT ($4::jsonb ->> s.currency::text)::int AS digits) d
 ORDER BY s.created_at, s.id`;

const backendPid = (await pool.query("select pg_backend_pid() as pid")).rows[0].pid;
const backendCpu = () => {
  const fields = readFileSync(`/proc/${backendPid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000; // µs (100 Hz ticks)
};
const args = { merchantId: "mer_bench000", status: "ACTIVE", after: null, limit: 51 };
const js = async () => jsonArray((await repo.list(args)).slice(0, 50), subscriptionJson);
const sql = async () => {
  const rows = (await pool.query<{ public_json: string }>({ name: "exp_sql_json", text: SQL, values: ["mer_bench000", "ACTIVE", 51, digits] })).rows;
  return `[${rows.slice(0, 50).map((r) => r.public_json).join(",")}]`;
};
const a = await js();
const b = await sql();
console.log("identical:", a === b, a.length, b.length);
if (a !== b) { for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) { console.log(a.slice(i - 80, i + 80)); console.log(b.slice(i - 80, i + 80)); break; } }
for (const round of [1, 2, 3]) {
  for (const [name, fn] of [["js", js], ["sql", sql]] as const) {
    const n = 1500;
    for (let i = 0; i < 100; i++) await fn();
    const node0 = process.cpuUsage(); const pg0 = backendCpu(); const t0 = performance.now();
    for (let i = 0; i < n; i++) await fn();
    const node = process.cpuUsage(node0); const pgUs = backendCpu() - pg0; const ms = performance.now() - t0;
    console.log(`round ${round} ${name}: node ${Math.round((node.user + node.system) / n)} µs, postgres ${Math.round(pgUs / n)} µs, total ${Math.round((node.user + node.system + pgUs) / n)} µs per page, wall ${(ms / n).toFixed(2)} ms`);
  }
}
await pool.end();
