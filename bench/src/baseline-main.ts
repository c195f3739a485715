import { createQueryPool } from "@subdata/query";
import { createBaselineServer } from "./baseline-server.ts";

// Wiring only: the baseline process the bench starts next to the stack (stack.ts).
function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set`);
  return value;
}

// The query service's own pool settings (read-only, generic plans): same SQL, planned the same way.
const pool = createQueryPool({
  connectionString: required("DATABASE_URL"),
  max: Number(process.env.DATABASE_POOL_MAX ?? 4),
  applicationName: "subdata-bench-baseline",
});
pool.on("error", () => {});
const server = createBaselineServer({
  pool,
  pageTokenSecret: required("SUBDATA_PAGE_TOKEN_SECRET"),
  apiKey: required("BENCH_BASELINE_KEY"),
  merchantId: required("BENCH_BASELINE_MERCHANT"),
});
server.keepAliveTimeout = 65_000;
server.listen(Number(required("PORT")), process.env.HOST ?? "127.0.0.1");

const stop = () => {
  server.close(() => void pool.end().then(() => process.exit(0)));
  server.closeAllConnections();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
