import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { AuditEvent } from "@subdata/proto/subdata/audit/v1/audit_event_pb";
import { timestampToPgText } from "@subdata/runtime";
import { exportAuditEvents } from "../audit-export.ts";
import { calendarDayMs } from "../calendar-date.ts";
import type { RegisterCommands } from "../cli-context.ts";
import { CliError } from "../cli-error.ts";
import { databaseUrlSetting, withDatabase } from "../database.ts";
import { parseRfc3339, parseWholeNumber } from "../option-parsers.ts";
import { timeText, withAuthService } from "./keys.ts";

const MAX_LIMIT = 10_000;

function auditEventJson(event: AuditEvent) {
  return {
    id: event.id,
    occurred_at: timeText(event.occurredAt),
    merchant_id: event.merchantId,
    api_key_id: event.apiKeyId,
    request_id: event.requestId,
    method: event.method,
    route: event.route,
    query: event.query,
    resource_ids: event.resourceIds,
    result_count: event.resultCount,
    status: event.status,
    client_ip: event.clientIp,
    user_agent: event.userAgent,
    latency_ms: event.latency ? Number(event.latency.seconds) * 1_000 + event.latency.nanos / 1_000_000 : 0,
  };
}

// Postgres's timestamps and the services' Timestamp fields hold years 1–9999.
const FIRST_SECOND = BigInt(Date.parse("0001-01-01T00:00:00Z") / 1_000);
const LAST_SECOND = BigInt(Date.parse("9999-12-31T23:59:59Z") / 1_000);

/** A day (YYYY-MM-DD, its UTC midnight) or an RFC 3339 time with an offset, in years 1–9999. */
function parseBoundary(text: string, option: string): Timestamp {
  try {
    const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
    const dayMs = day ? calendarDayMs(Number(day[1]), Number(day[2]), Number(day[3])) : undefined;
    const time = parseRfc3339(dayMs === undefined ? text : `${text}T00:00:00Z`, option);
    if (time.seconds >= FIRST_SECOND && time.seconds <= LAST_SECOND) return time;
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
  }
  throw new CliError(`${option} must be a day (2026-11-01, UTC) or an RFC 3339 time with an offset (2026-11-01T00:00:00Z), in years 1–9999, got "${text}"`);
}

function isAfter(a: Timestamp, b: Timestamp): boolean {
  return a.seconds > b.seconds || (a.seconds === b.seconds && a.nanos > b.nanos);
}

const STATUS_CLASSES = new Map<string, { min: number; max: number }>([
  ["2xx", { min: 200, max: 299 }],
  ["3xx", { min: 300, max: 399 }],
  ["4xx", { min: 400, max: 499 }],
  ["5xx", { min: 500, max: 599 }],
  ["errors", { min: 400, max: 599 }],
]);

/** --status: a class (2xx … 5xx, errors) or one HTTP status code. */
function parseStatusFilter(text: string): { min: number; max: number } {
  const named = STATUS_CLASSES.get(text.toLowerCase());
  if (named) return named;
  if (/^[1-5]\d\d$/.test(text)) return { min: Number(text), max: Number(text) };
  throw new CliError(`--status must be 2xx, 3xx, 4xx, 5xx, errors or an HTTP status code (100–599), got "${text}"`);
}

/** `subdata audit list`: a merchant's audit log of public API reads, oldest first. `audit export`: every merchant's rows of a time range, for archiving. */
export const registerAuditCommands: RegisterCommands = (program, context) => {
  const audit = program.command("audit").description("read the audit log of public API reads");
  audit
    .command("list")
    .description("list a merchant's audit events, oldest first")
    .requiredOption("--merchant <id>", "mer_…")
    .option("--key <key-id>", "only the events of this API key (key_…)")
    .option("--route <template>", "only the events of this route, as recorded (/v1/subscriptions/{id})")
    .option("--status <status>", "only these statuses: 2xx, 3xx, 4xx, 5xx, errors (4xx and 5xx) or one code (404)")
    .option("--since <time>", "only events at or after: a day (2026-11-01, UTC) or an RFC 3339 time")
    .option("--until <time>", "only events before: a day or an RFC 3339 time")
    .option("--limit <n>", `how many events at most (1–${MAX_LIMIT})`, "50")
    .action(async (options: { merchant: string; key?: string; route?: string; status?: string; since?: string; until?: string; limit: string }) => {
      const limit = parseWholeNumber(options.limit, "--limit", { min: 1, max: MAX_LIMIT });
      const statuses = options.status === undefined ? { min: 0, max: 0 } : parseStatusFilter(options.status);
      const since = options.since === undefined ? undefined : parseBoundary(options.since, "--since");
      const until = options.until === undefined ? undefined : parseBoundary(options.until, "--until");
      if (since && until && !isAfter(until, since)) throw new CliError("--until must be after --since");
      const filters = {
        apiKeyId: options.key ?? "",
        route: options.route ?? "",
        minStatus: statuses.min,
        maxStatus: statuses.max,
        startTime: since,
        endTime: until,
      };
      const { events, more } = await withAuthService(context, async (clients) => {
        const found: AuditEvent[] = [];
        let pageToken = "";
        do {
          const page = await clients.audit.listAuditEvents({
            merchantId: options.merchant,
            ...filters,
            pageSize: Math.min(200, limit - found.length),
            pageToken,
          });
          found.push(...page.auditEvents);
          pageToken = page.nextPageToken;
        } while (pageToken !== "" && found.length < limit);
        return { events: found, more: pageToken !== "" };
      });
      const lines = events.map(
        (event) =>
          `${timeText(event.occurredAt)}  ${event.apiKeyId}  ${event.status}  ${event.method} ${event.route}${event.query ? `?${event.query}` : ""}` +
          `  ${event.resultCount} result(s)  ${event.clientIp}  ${event.requestId}`,
      );
      const filtered = options.key !== undefined || options.route !== undefined || options.status !== undefined || since !== undefined || until !== undefined;
      if (events.length === 0) lines.push(`no audit events for ${options.merchant}${filtered ? " that match the filters" : ""}`);
      if (more) lines.push(`(more events follow; raise --limit to see them)`);
      context.output.result({ audit_events: events.map(auditEventJson), has_more: more }, lines.join("\n"));
    });

  audit
    .command("export")
    .description(
      "write every audit row with --since <= occurred_at < --until, all merchants, oldest first, as gzipped NDJSON " +
        "(to archive a month before its partition is dropped; DATABASE_URL: an owner, or a role that may SELECT audit_events)",
    )
    .requiredOption("--since <time>", "first instant included: a day (2026-10-01, UTC) or an RFC 3339 time")
    .requiredOption("--until <time>", "first instant not included")
    .option("--output <file>", "write here (refuses to overwrite; complete only once renamed from <file>.partial); default: stdout")
    .action(async (options: { since: string; until: string; output?: string }, command: { optsWithGlobals(): { json?: boolean } }) => {
      const since = parseBoundary(options.since, "--since");
      const until = parseBoundary(options.until, "--until");
      if (!isAfter(until, since)) throw new CliError("--until must be after --since");
      const json = command.optsWithGlobals().json === true;
      if (options.output === undefined && json) throw new CliError("--json needs --output: stdout carries the export");
      if (options.output === undefined && context.stdout.isTTY) {
        throw new CliError("will not write gzipped data to a terminal: give --output <file> or redirect stdout");
      }
      const range = { since: timestampToPgText(since), until: timestampToPgText(until) };
      const result = await withDatabase(databaseUrlSetting(context), context.signal, (client) =>
        exportAuditEvents(client, range, options.output === undefined ? { stream: context.stdout } : { file: options.output }),
      );
      const summary = {
        since: range.since,
        until: range.until,
        output: options.output ?? null,
        rows: result.rows,
        bytes: result.bytes,
        sha256: result.sha256,
      };
      const text = `exported ${result.rows} audit row(s) from ${range.since} to ${range.until} (${result.bytes} bytes gzipped, sha256 ${result.sha256})`;
      if (options.output === undefined) context.output.info(text);
      else context.output.result(summary, text);
    });
};
