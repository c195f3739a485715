import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { createHash } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyDirectory, json, runCli } from "../cli/run-cli.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { insertAuditRow } from "./support.ts";

// `subdata audit export`: the rows of a range, every merchant, oldest first, as gzipped NDJSON, to a
// file (complete only once renamed) or to stdout, so a month can be archived before it is dropped.

let database: TestDatabase;
let admin: pg.Pool;
const BIN = fileURLToPath(new URL("../../services/cli/bin/subdata.js", import.meta.url));

beforeAll(async () => {
  database = await createTestDatabase("audit_export");
  admin = new pg.Pool({ connectionString: database.adminUrl, max: 2, options: "-c TimeZone=UTC" });
  // Across a month boundary and in a partition of its own: the export walks every partition in order.
  for (const at of [
    "2026-09-30T23:59:59.999999Z",
    "2026-10-01T00:00:00Z",
    "2026-10-15T12:00:00.000001Z",
    "2026-10-31T23:59:59.999999Z",
    "2026-11-01T00:00:00Z",
  ]) {
    await insertAuditRow(admin, "mer_export_a", at);
  }
  // Rows sharing one instant are ordered by id, and more rows than a page of the walk (5,000).
  await admin.query(
    `INSERT INTO audit_events (id, occurred_at, merchant_id, api_key_id, request_id, method, route, query, resource_ids,
       result_count, status, client_ip, user_agent, latency_micros)
     SELECT 'aud_bulk' || lpad(g::text, 6, '0'), '2026-10-20T00:00:00Z', 'mer_export_b', 'key_b', 'req_' || g, 'GET', '/v1/orders',
            E'q="\\\\\\n"', ARRAY['ord_' || g], 1, 200, '203.0.113.9', E'agent\\twith tab', g
       FROM generate_series(1, 5003) g`,
  );
});

afterAll(async () => {
  await admin?.end();
  await database?.drop();
});

/** What the table holds for the range, as the export should write it. */
async function expected(since: string, until: string): Promise<Array<Record<string, unknown>>> {
  const { rows } = await admin.query<{ row: Record<string, unknown> }>(
    `SELECT json_build_object('id', id, 'occurred_at', to_char(occurred_at, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), 'merchant_id', merchant_id,
       'api_key_id', api_key_id, 'request_id', request_id, 'method', method, 'route', route, 'query', query, 'resource_ids', resource_ids,
       'result_count', result_count, 'status', status, 'client_ip', client_ip, 'user_agent', user_agent, 'latency_micros', latency_micros) AS row
       FROM audit_events WHERE occurred_at >= $1 AND occurred_at < $2 ORDER BY occurred_at, id`,
    [since, until],
  );
  return rows.map((row) => row.row);
}

const lines = (gzipped: Buffer) =>
  gunzipSync(gzipped)
    .toString("utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe("subdata audit export", () => {
  it("writes exactly the rows with since <= occurred_at < until, in order, every column, to a file it completes by linking it to its name", async () => {
    const dir = emptyDirectory();
    const output = join(dir, "audit-2026-10.ndjson.gz");
    const run = await runCli(["audit", "export", "--since", "2026-10-01", "--until", "2026-11-01", "--output", output, "--json"], {
      env: { DATABASE_URL: database.adminUrl },
    });
    expect(run.code, run.stderr).toBe(0);
    const file = readFileSync(output);
    const written = lines(file);
    const want = await expected("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z");
    expect(written).toHaveLength(5_003 + 3);
    expect(written).toEqual(want);
    expect(written[0]).toMatchObject({ occurred_at: "2026-10-01T00:00:00.000000Z", resource_ids: ["sub_a", "sub_b"], latency_micros: 1234 });
    expect(written.at(-1)).toMatchObject({ occurred_at: "2026-10-31T23:59:59.999999Z" });
    expect(json(run)).toEqual({
      since: "2026-10-01T00:00:00.000000Z",
      until: "2026-11-01T00:00:00.000000Z",
      output,
      rows: 5_006,
      bytes: file.length,
      sha256: createHash("sha256").update(file).digest("hex"),
    });
    expect(readdirSync(dir)).toEqual(["audit-2026-10.ndjson.gz"]);

    // An existing file is never overwritten, and no partial file is left behind.
    const again = await runCli(["audit", "export", "--since", "2026-10-01", "--until", "2026-11-01", "--output", output], {
      env: { DATABASE_URL: database.adminUrl },
    });
    expect(again.code).toBe(1);
    expect(readFileSync(output).equals(file)).toBe(true);
    expect(existsSync(`${output}.partial`)).toBe(false);
  });

  it("writes to stdout when no file is named, RFC 3339 bounds taken exactly", async () => {
    const stdout = await new Promise<Buffer>((resolve, reject) => {
      execFile(
        process.execPath,
        [BIN, "audit", "export", "--since", "2026-10-31T23:59:59.999999Z", "--until", "2026-11-01T00:00:00.000001Z"],
        { env: { PATH: process.env.PATH ?? "", HOME: emptyDirectory(), DATABASE_URL: database.adminUrl }, encoding: "buffer", cwd: emptyDirectory() },
        (error, out, err) => (error ? reject(new Error(`${error.message}\n${err.toString()}`)) : resolve(out)),
      );
    });
    expect(lines(stdout).map((row) => row.occurred_at)).toEqual(["2026-10-31T23:59:59.999999Z", "2026-11-01T00:00:00.000000Z"]);
  });

  it("refuses a range that ends before it starts, and --json without a file", async () => {
    const env = { DATABASE_URL: database.adminUrl };
    const backwards = await runCli(["audit", "export", "--since", "2026-11-01", "--until", "2026-10-01", "--output", "x.gz"], { env });
    expect(backwards.code).toBe(1);
    expect(backwards.stderr).toMatch(/--until must be after --since/);
    const toStdout = await runCli(["audit", "export", "--since", "2026-10-01", "--until", "2026-11-01", "--json"], { env });
    expect(toStdout.code).toBe(1);
    expect(json<{ error: { message: string } }>(toStdout).error.message).toMatch(/--json needs --output/);
  });
});
