import type { EventPage, SubdataClient } from "@subdata/client";
import type pg from "pg";
import { MirrorError } from "./mirror-error.ts";
import { RESOURCES, type Resource, type TableName } from "./tables.ts";
import { clearTarget, prepareTargetSchema } from "./target-schema.ts";
import { createTargetWriter, type ResourceObject, type TargetWriter } from "./target-writer.ts";

/**
 * The documented recipe for a copy (docs/api.md, "Keeping a copy"), made resumable:
 *   1. take cursor=head and store it (sync_state, phase walk);
 *   2. walk /v1/subscriptions, /v1/charges and /v1/orders side by side, each page's rows committed with
 *      that list's next cursor;
 *   3. apply the feed from the stored head, each page's changes committed with its next_cursor: upsert
 *      when the incoming version is newer, delete on *.deleted. Events the walk already saw change
 *      nothing.
 * A kill at any point loses only an uncommitted page, which the next run reads again from the stored
 * cursor. Without `follow` the run ends once the feed is caught up; with it, it long-polls until the
 * signal aborts, always between two pages.
 */

export interface MirrorOptions {
  /** The API, as the key's merchant sees it. */
  client: SubdataClient;
  /** The target database; the mirror takes up to five connections. */
  pool: pg.Pool;
  schema: string;
  follow: boolean;
  /** Empty the copy and its state first, then copy everything anew. */
  resync?: boolean;
  /** Stops the run between two pages (SIGINT/SIGTERM); the run then resolves with `stopped: true`. */
  signal?: AbortSignal;
  onProgress?: (progress: MirrorProgress) => void;
  /** Rows per list page (1–200, default 200) and events per feed page (1–1000, default 1000). */
  listPageSize?: number;
  feedPageSize?: number;
  /** Long-poll seconds while following (default 30). */
  waitSeconds?: number;
  /** How long to wait for another mirror's hold on the schema to go (default 10 s). */
  lockTimeoutMs?: number;
}

export type MirrorProgress =
  | { kind: "started"; phase: "walk" | "feed"; resumed: boolean }
  | { kind: "walk-page"; resource: Resource; rows: number }
  | { kind: "walked"; resource: Resource }
  | { kind: "feed-page"; events: number; caughtUp: boolean };

export interface MirrorResult {
  phase: "walk" | "feed";
  /** The signal stopped the run (between pages; the next run resumes). */
  stopped: boolean;
  /** Feed events applied since the copy started, each exactly once. */
  eventsApplied: number;
  rows: Record<Exclude<TableName, "sync_state">, number>;
}

const LOCK_CLASS = 0x5344_4d52; // "SDMR"

async function takeSchemaLock(db: pg.ClientBase, schema: string, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await db.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked", [LOCK_CLASS, schema]);
    if (result.rows[0]!.locked) return;
    // A mirror killed a moment ago may still hold it until its server session notices.
    if (Date.now() >= deadline || signal?.aborted) {
      throw new MirrorError(`another mirror is writing into schema ${schema} (it holds the schema's lock): stop it first`, "locked");
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const isAbort = (error: unknown, signal: AbortSignal) => signal.aborted && (error === signal.reason || (error as { name?: unknown }).name === "AbortError");

export async function runMirror(options: MirrorOptions): Promise<MirrorResult> {
  const { client, pool, schema } = options;
  const progress = options.onProgress ?? (() => {});
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const stopped = () => options.signal?.aborted === true;

  // The API first: a wrong key or an unreachable API fails the run before the target is touched. The
  // head is kept only when the copy starts afresh.
  let head: string;
  try {
    head = (await client.listEvents({ cursor: "head" }, { signal })).next_cursor;
  } catch (error) {
    if (stopped() && isAbort(error, signal))
      return { phase: "walk", stopped: true, eventsApplied: 0, rows: { subscriptions: 0, charges: 0, orders: 0, order_line_items: 0 } };
    throw error;
  }

  const lock = await pool.connect();
  try {
    await takeSchemaLock(lock, schema, options.lockTimeoutMs ?? 10_000, options.signal);
    await prepareTargetSchema(lock, schema);
    if (options.resync) await clearTarget(lock, schema);
    const writer = createTargetWriter(pool, schema);

    let state = await writer.readState();
    progress({ kind: "started", phase: state?.phase ?? "walk", resumed: state !== undefined });
    if (!state) {
      await writer.start(client.baseUrl, head);
      state = (await writer.readState())!;
    }

    if (state.phase === "walk") {
      const pending = RESOURCES.filter((resource) => !state![`${resource}_walked`]);
      // Side by side: the lists are independent, and each keeps its own cursor. The first failure stops
      // the other walks (their pages so far stay committed) and is the one reported.
      let failure: { error: unknown } | undefined;
      await Promise.all(
        pending.map((resource) =>
          walkList(client, writer, resource, state![`${resource}_cursor`], options, signal, progress).catch((error: unknown) => {
            if (failure || (stopped() && isAbort(error, signal))) return;
            failure = { error };
            stop.abort(error);
          }),
        ),
      );
      if (failure) throw failure.error;
      if (stopped()) return await result(writer, true);
      await writer.finishWalk();
      state = (await writer.readState())!;
    }

    await followFeed(client, writer, state.feed_cursor, options, signal, progress);
    return await result(writer, stopped());
  } catch (error) {
    if (stopped() && isAbort(error, signal)) return await result(createTargetWriter(pool, schema), true);
    throw error;
  } finally {
    await lock.query("SELECT pg_advisory_unlock($1, hashtext($2))", [LOCK_CLASS, schema]).catch(() => {});
    lock.release();
  }
}

async function result(writer: TargetWriter, stopped: boolean): Promise<MirrorResult> {
  const state = await writer.readState();
  return {
    phase: state?.phase ?? "walk",
    stopped,
    eventsApplied: Number(state?.events_applied ?? 0),
    rows: await writer.rowCounts(),
  };
}

async function walkList<R extends Resource>(
  client: SubdataClient,
  writer: TargetWriter,
  resource: R,
  cursor: string | null,
  options: MirrorOptions,
  signal: AbortSignal,
  progress: (progress: MirrorProgress) => void,
): Promise<void> {
  let from = cursor;
  const params = { limit: options.listPageSize ?? 200, ...(cursor !== null ? { cursor } : {}) };
  for await (const page of client.walkPages(resource, params, { signal })) {
    await writer.applyWalkPage(resource, page.data as ResourceObject[R][], from, page.next_cursor);
    progress({ kind: "walk-page", resource, rows: page.data.length });
    from = page.next_cursor;
    if (options.signal?.aborted) return;
  }
  progress({ kind: "walked", resource });
}

async function followFeed(
  client: SubdataClient,
  writer: TargetWriter,
  cursor: string,
  options: MirrorOptions,
  signal: AbortSignal,
  progress: (progress: MirrorProgress) => void,
): Promise<void> {
  let from = cursor;
  const apply = async (page: EventPage) => {
    // A quiet long poll that hands back the same position changes nothing worth a transaction.
    if (page.data.length > 0 || page.next_cursor !== from) await writer.applyFeedPage(page.data, from, page.next_cursor);
    from = page.next_cursor;
    progress({ kind: "feed-page", events: page.data.length, caughtUp: !page.has_more });
  };
  // Catch up without waiting (a long poll would hold the last, empty page back), then, when following,
  // long-poll from where that ended.
  const limit = options.feedPageSize ?? 1000;
  for await (const page of client.followPages({ cursor: from, limit, wait: 0, signal, maxRetries: client.maxRetries })) {
    await apply(page);
    if (options.signal?.aborted || !page.has_more) break;
  }
  if (!options.follow || options.signal?.aborted) return;
  for await (const page of client.followPages({ cursor: from, limit, wait: options.waitSeconds ?? 30, signal })) {
    await apply(page);
    if (options.signal?.aborted) return;
  }
}
