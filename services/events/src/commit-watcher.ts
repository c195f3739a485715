import { Counter, createBackoff, createPool, Gauge, type Logger, type Pool, type Queryable, type Registry } from "@subdata/runtime";

/**
 * Learns which merchants' changes have committed by polling, so that no writer notifies: a transaction
 * that calls pg_notify holds Postgres's one notify lock from its commit record until the record is
 * flushed, which makes every captured write of every merchant commit one at a time
 * (docs/decisions.md, "Commits are watched, not notified").
 *
 * Every change commit draws a position from the sequence change_commit_position at commit time and
 * writes a change_commits row with it. A tick reads the sequence (one cheap statement, the only one
 * while nothing commits); when it has moved, a second statement reads the change_commits rows
 * between the last tick's value and this one's. A position drawn but not yet visible belongs to a
 * transaction still committing, or to one that failed at commit (a serialization failure, a deferred
 * constraint): it is looked for again at every tick for maxUnresolvedAgeMs, so a commit that becomes
 * visible late is still reported. Postgres cannot tell a reader which transaction drew a position it
 * cannot see, so whether that one is still running cannot be asked; a commit stalled for longer than
 * the bound costs its waiters their wake-up (the long poll answers at its deadline, the relay finds
 * the rows at its fallback poll), never an event.
 */
export interface CommitWatcher {
  /** Ticks every `intervalMs` until close(). */
  start(): void;
  /** One tick; the loop calls it, tests may too. Throws if the database fails. */
  poll(): Promise<void>;
  /** Ticks again after `active` said no (the loop then stops, keeping its place); call when it would say yes. */
  resume(): void;
  /** Positions drawn but not yet seen committed, kept for the next ticks (at most maxUnresolved). */
  readonly unresolved: number;
  close(): Promise<void>;
}

export interface CommitWatcherOptions {
  /** Reads change_commit_position and change_commits (the query and relay roles may). */
  db: Queryable;
  logger: Logger;
  /** Pause between ticks: the latency a wake-up adds (half of it on average). */
  intervalMs: number;
  /** Called with the merchants whose commits became visible since the last report. */
  onCommits: (merchantIds: ReadonlySet<string>) => void;
  /**
   * Called when the watcher cannot say which merchants committed: its first tick (commits before it
   * are unknown), a jump of more than maxRange positions, a sequence that went back (a restore), or
   * an unresolved position dropped to keep the bound. Whoever waits should look again. After the first
   * three, the watcher still reads the last LOOK_BACK positions, so a commit that was in flight then is
   * reported once visible.
   */
  onUnknown: () => void;
  /**
   * Asked before each tick (default: always yes). On a no the loop stops, with no timer left, until
   * resume(); the watcher keeps its place.
   */
  active?: () => boolean;
  /** The most positions one tick reads (default 10,000); beyond, onUnknown. */
  maxRange?: number;
  /** The most unresolved positions kept (default 1,000); beyond, the lowest go and onUnknown. */
  maxUnresolved?: number;
  /** How long a drawn position that is not visible is looked for (default 30 s). */
  maxUnresolvedAgeMs?: number;
  /** Milliseconds on a monotonic clock (default performance.now). */
  now?: () => number;
  /**
   * Registers subdata_commit_watch_failures_total (looks that could not read) and
   * subdata_commit_watch_unresolved_positions (read at scrape time).
   */
  metrics?: Registry;
}

interface CommitsRow {
  commits: Array<[string, string]>;
}

/**
 * Positions read back when the watcher has lost its place: more than a server has commits in flight at
 * once (each needs a connection; ours allow about a hundred).
 */
const LOOK_BACK = 256n;

const READ_SEQUENCE = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END::text AS last FROM change_commit_position";

// Every merchant's commits: the watch only learns whom to wake, and nothing it reads leaves the process.
const READ_COMMITS = `
  SELECT coalesce(json_agg(json_build_array(c.position::text, c.merchant_id)), '[]') AS commits
    FROM change_commits c
   WHERE (c.position > $1::bigint AND c.position <= $2::bigint) OR c.position = ANY($3::bigint[])`;

/** The watch's statements, for the plan test: both are sent unnamed, so each is planned for its values. */
export const commitWatchStatements = { readSequence: READ_SEQUENCE, readCommits: READ_COMMITS } as const;

export interface CommitWatchPoolOptions {
  /** A role that may read change_commit_position and change_commits (query, relay). */
  connectionString: string;
  applicationName: string;
  statementTimeoutMs?: number;
  logger: Logger;
}

/**
 * The watch's own pool: one read-only connection, so a tick never waits behind the process's other
 * work for a slot, and planned per execution (a query pool's forced generic plans would not see the
 * range the tick reads). A connection lost while idle is logged; the next tick reconnects.
 */
export function createCommitWatchPool(options: CommitWatchPoolOptions): Pool {
  const pool = createPool({
    connectionString: options.connectionString,
    max: 1,
    readOnly: true,
    statementTimeoutMs: options.statementTimeoutMs,
    applicationName: options.applicationName,
  });
  pool.on("error", (error) => options.logger.warn({ err: error }, "idle commit-watch connection failed"));
  return pool;
}

export function createCommitWatcher(options: CommitWatcherOptions): CommitWatcher {
  const maxRange = BigInt(options.maxRange ?? 10_000);
  const maxUnresolved = options.maxUnresolved ?? 1_000;
  const maxUnresolvedAgeMs = options.maxUnresolvedAgeMs ?? 30_000;
  const now = options.now ?? (() => performance.now());
  const active = options.active ?? (() => true);
  /** The sequence's value at the last tick; undefined until the first. */
  let seen: bigint | undefined;
  /** Positions drawn but not yet visible → when they were first looked for. */
  const unresolved = new Map<bigint, number>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  /** Stopped because `active` said no; resume() starts the loop again. */
  let paused = false;
  let ticking: Promise<void> | undefined;
  const failedLooks = options.metrics
    ? new Counter({ name: "subdata_commit_watch_failures_total", help: "Looks for new commits that could not read them", registers: [options.metrics] })
    : undefined;
  if (options.metrics) {
    new Gauge({
      name: "subdata_commit_watch_unresolved_positions",
      help: "Positions drawn by commits not yet visible, still looked for",
      registers: [options.metrics],
      collect() {
        this.set(unresolved.size);
      },
    });
  }

  async function poll(): Promise<void> {
    const { rows } = await options.db.query<{ last: string }>(READ_SEQUENCE);
    const last = BigInt(rows[0]?.last ?? "0");
    if (seen === undefined || last - seen > maxRange || last < seen) {
      if (seen !== undefined) options.logger.debug({ from: String(seen), to: String(last) }, "commit watcher lost its place");
      options.onUnknown();
      unresolved.clear();
      // Commits already visible are reported again (a harmless extra look for their waiters); one
      // still in flight becomes unresolved and is reported once visible.
      seen = last > LOOK_BACK ? last - LOOK_BACK : 0n;
    }
    if (last <= seen && unresolved.size === 0) return;

    const lookedFor = [...unresolved.keys()].map(String);
    const result = await options.db.query<CommitsRow>(READ_COMMITS, [String(seen), String(last), lookedFor]);
    const row = result.rows[0];
    if (!row) return;
    const tickAt = now();
    const merchants = new Set<string>();
    const found = new Set<bigint>();
    for (const [position, merchantId] of row.commits) {
      found.add(BigInt(position));
      merchants.add(merchantId);
    }
    for (const [position, firstLookedFor] of unresolved) {
      if (found.has(position) || tickAt - firstLookedFor >= maxUnresolvedAgeMs) unresolved.delete(position);
    }
    for (let position = seen + 1n; position <= last; position++) {
      if (!found.has(position)) unresolved.set(position, tickAt);
    }
    seen = last;
    let dropped = false;
    for (const position of unresolved.keys()) {
      if (unresolved.size <= maxUnresolved) break;
      unresolved.delete(position);
      dropped = true;
    }
    if (merchants.size > 0) options.onCommits(merchants);
    if (dropped) {
      options.logger.warn({ kept: maxUnresolved }, "commit watcher dropped positions it was still waiting for");
      options.onUnknown();
    }
  }

  // A database that does not answer is retried with backoff, not every interval (and logged as often).
  const failures = createBackoff({ initialMs: 250, maxMs: 5_000 });

  function schedule(delayMs: number): void {
    if (closed) return;
    timer = setTimeout(() => {
      if (!active()) {
        paused = true;
        return;
      }
      ticking = poll()
        .then(
          () => {
            failures.reset();
            return options.intervalMs;
          },
          (error: unknown) => {
            options.logger.warn({ err: error }, "commit watcher could not read commits");
            failedLooks?.inc();
            return failures.next();
          },
        )
        .then((next) => {
          ticking = undefined;
          schedule(next);
        });
    }, delayMs);
    // The watch alone keeps no process alive: close() stops it, exit does not wait for it.
    timer.unref();
  }

  return {
    start() {
      if (timer === undefined && !closed) schedule(options.intervalMs);
    },
    poll,
    resume() {
      if (!paused || closed) return;
      paused = false;
      schedule(options.intervalMs);
    },
    get unresolved() {
      return unresolved.size;
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      await ticking;
    },
  };
}
