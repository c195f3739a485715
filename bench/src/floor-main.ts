import pg from "pg";
import { createFloorServer } from "./floor-server.ts";

// Wiring only: the independent floor the bench starts next to the stack (stack.ts).
function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set`);
  return value;
}

const TIMESTAMPTZ_OID = 1184;

// Its own pool: sessions in UTC, timestamps kept as Postgres's text (microseconds, for exact cursors),
// int8 as pg's default text; Postgres's default plan choice for the named statements.
const pool = new pg.Pool({
  connectionString: required("DATABASE_URL"),
  max: Number(process.env.DATABASE_POOL_MAX ?? 4),
  application_name: "subdata-bench-floor",
  options: "-c TimeZone=UTC",
  types: {
    getTypeParser: ((oid: number, format?: "text" | "binary") =>
      oid === TIMESTAMPTZ_OID ? (value: string) => value : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig["getTypeParser"],
  },
});
pool.on("error", () => {});
const server = createFloorServer({
  pool,
  cursorSecret: required("BENCH_FLOOR_CURSOR_SECRET"),
  apiKey: required("BENCH_FLOOR_KEY"),
  merchantId: required("BENCH_FLOOR_MERCHANT"),
});
server.keepAliveTimeout = 65_000;
server.listen(Number(required("PORT")), process.env.HOST ?? "127.0.0.1");

const stop = () => {
  server.close(() => void pool.end().then(() => process.exit(0)));
  server.closeAllConnections();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
