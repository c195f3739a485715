import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { access, link, rm } from "node:fs/promises";
import { CliError } from "./cli-error.ts";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import type pg from "pg";

/** Rows per keyset page: a few MB in memory whatever the range holds. */
const PAGE_ROWS = 5_000;

// One JSON object per row, built by Postgres: the table's columns under their own names, occurred_at
// as RFC 3339 UTC with its microseconds (a JS Date would drop them), latency_micros a JSON number.
// `position` is the keyset cursor (exact timestamptz text, and the id) and is not written out.
const PAGE = `
  SELECT a.occurred_at::text AS position_at, a.id AS position_id, row_to_json(r)::text AS line
    FROM audit_events a
   CROSS JOIN LATERAL (
     SELECT a.id, to_char(a.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred_at,
            a.merchant_id, a.api_key_id, a.request_id, a.method, a.route, a.query, a.resource_ids,
            a.result_count, a.status, a.client_ip, a.user_agent, a.latency_micros) r
   WHERE a.occurred_at >= $1::timestamptz AND a.occurred_at < $2::timestamptz
     AND (a.occurred_at, a.id) > ($3::timestamptz, $4::text)
   ORDER BY a.occurred_at, a.id
   LIMIT ${PAGE_ROWS}`;

export interface AuditExportRange {
  /** Inclusive; Postgres timestamptz text or RFC 3339. */
  since: string;
  /** Exclusive. */
  until: string;
}

export interface AuditExportResult {
  rows: number;
  /** Size of the gzipped output. */
  bytes: number;
  /** SHA-256 (hex) of the gzipped output, to check an archived copy against. */
  sha256: string;
}

/** Every audit row of the range, oldest first, as gzipped NDJSON into `destination`. */
async function* pages(client: pg.Client, range: AuditExportRange): AsyncGenerator<string> {
  // Before every row: the keyset starts below the first possible (occurred_at, id).
  let at = "-infinity";
  let id = "";
  for (;;) {
    const { rows } = await client.query<{ position_at: string; position_id: string; line: string }>(PAGE, [range.since, range.until, at, id]);
    if (rows.length === 0) return;
    yield `${rows.map((row) => row.line).join("\n")}\n`;
    const last = rows[rows.length - 1]!;
    at = last.position_at;
    id = last.position_id;
    if (rows.length < PAGE_ROWS) return;
  }
}

/**
 * Writes the audit rows with since <= occurred_at < until as gzipped NDJSON, walking the primary key
 * (occurred_at, id) page by page: no long transaction, memory bounded by a page. To a file, it writes
 * `<file>.partial` and links it to its name only when complete, so an interrupted export never looks
 * finished, and an existing file is never replaced.
 */
export async function exportAuditEvents(
  client: pg.Client,
  range: AuditExportRange,
  output: { file: string } | { stream: NodeJS.WritableStream },
  onRows: (rows: number) => void = () => {},
): Promise<AuditExportResult> {
  let rows = 0;
  let bytes = 0;
  const hash = createHash("sha256");
  const source = async function* () {
    for await (const page of pages(client, range)) {
      const count = page.split("\n").length - 1;
      rows += count;
      onRows(rows);
      yield page;
    }
  };
  const measure = async function* (chunks: AsyncIterable<Buffer>) {
    for await (const chunk of chunks) {
      hash.update(chunk);
      bytes += chunk.length;
      yield chunk;
    }
  };
  if ("file" in output) {
    const partial = `${output.file}.partial`;
    if (
      await access(output.file).then(
        () => true,
        () => false,
      )
    )
      throw new CliError(`${output.file} exists: an export never overwrites a file`);
    try {
      await pipeline(source, createGzip(), measure, createWriteStream(partial, { flags: "wx" }));
      // link, unlike rename, fails rather than replace a file that appeared meanwhile.
      await link(partial, output.file);
    } finally {
      await rm(partial, { force: true });
    }
  } else {
    // The caller's stream (stdout) stays open: the pipeline ends in a writer that does not end it.
    const target = output.stream;
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        if (target.write(chunk)) done();
        else target.once("drain", () => done());
      },
    });
    await pipeline(source, createGzip(), measure, sink);
  }
  return { rows, bytes, sha256: hash.digest("hex") };
}
