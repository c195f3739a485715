import { runSeed } from "@subdata/cli";
import { migrate, roleDatabaseUrl, serviceRoles, type ServiceName } from "@subdata/db";
import pg from "pg";

/**
 * The bench dataset: its own database on DATABASE_URL's server, built once per size and tenant mix and
 * reused while its marker row says it is complete. Tenant mixes, because a plan or a cost can depend on
 * how rows are spread over merchants:
 * - skewed (the default): one merchant holds 30 % (the HTTP scenarios walk it, so a page 100,000 rows
 *   deep exists in the full dataset), one holds 5 % (its subscriptions change in the webhook phase,
 *   leaving the big one's pages stable across runs) and the rest share what is left;
 * - dominant: every row in one merchant (a single-brand deployment); the webhook phase changes that
 *   merchant's subscriptions too;
 * - small: at least 10,000 merchants sharing the rows evenly; the scenarios read the first.
 */

export type TenantMix = "skewed" | "dominant" | "small";

export interface DatasetSpec {
  subscriptions: number;
  /** Merchants of the skewed mix (the small mix has at least 10,000; the dominant one, one). */
  merchants: number;
  mix: TenantMix;
  /** The database's name starts with this (default subdata_bench): a mode that changes its data keeps a dataset of its own. */
  namePrefix?: string;
}

export interface Dataset {
  databaseName: string;
  adminUrl: string;
  mix: TenantMix;
  bigMerchantId: string;
  hooksMerchantId: string;
  /** Whether this run built it, and how long that took. */
  built: boolean;
  buildSeconds: number;
  counts: { merchants: number; subscriptions: number; charges: number; orders: number };
}

const SPEC_VERSION = 1;
const SEED_NOW_MICROS = Date.UTC(2026, 10, 1) * 1000;
const SMALL_MIX_MERCHANTS = 10_000;

function merchantId(index: number, count: number): string {
  return `mer_bench${String(index).padStart(Math.max(3, String(count - 1).length), "0")}`;
}

/** How many subscriptions merchant `index` gets; the shares add up to `spec.subscriptions` exactly. */
function merchantShares(spec: DatasetSpec): number[] {
  const even = (total: number, merchants: number) =>
    Array.from({ length: merchants }, (_, i) => Math.floor(total / merchants) + (i < total % merchants ? 1 : 0));
  if (spec.mix === "dominant") return [spec.subscriptions];
  if (spec.mix === "small") return even(spec.subscriptions, Math.max(SMALL_MIX_MERCHANTS, spec.merchants));
  if (spec.merchants < 3) throw new Error("the bench needs at least 3 merchants");
  const big = Math.floor(spec.subscriptions * 0.3);
  const hooks = Math.floor(spec.subscriptions * 0.05);
  return [big, hooks, ...even(spec.subscriptions - big - hooks, spec.merchants - 2)];
}

function databaseUrlFor(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

// The skewed mix keeps the name and marker it had before mixes existed, so its datasets are reused.
const markerText = (spec: DatasetSpec) =>
  `v${SPEC_VERSION} subscriptions=${spec.subscriptions} merchants=${spec.merchants}${spec.mix === "skewed" ? "" : ` mix=${spec.mix}`}`;
const databaseNameOf = (spec: DatasetSpec) =>
  `${spec.namePrefix ?? "subdata_bench"}_s${spec.subscriptions}_${spec.mix === "skewed" ? `m${spec.merchants}` : spec.mix}`;

async function readMarker(adminUrl: string, spec: DatasetSpec): Promise<boolean> {
  return withClient(adminUrl, async (client) => {
    const table = await client.query("SELECT to_regclass('bench_dataset') IS NOT NULL AS present");
    if (!table.rows[0]?.present) return false;
    const marker = await client.query("SELECT 1 FROM bench_dataset WHERE spec = $1", [markerText(spec)]);
    return (marker.rowCount ?? 0) > 0;
  });
}

/** Seeds merchants two at a time: one generates rows while Postgres ingests the other's COPY. */
async function seedAll(adminUrl: string, spec: DatasetSpec, say: (line: string) => void): Promise<void> {
  const shares = merchantShares(spec);
  let next = 0;
  let done = 0;
  const started = Date.now();
  const worker = () =>
    withClient(adminUrl, async (client) => {
      await client.query("SET synchronous_commit = off");
      while (next < shares.length) {
        const index = next++;
        await runSeed(client, {
          merchantId: merchantId(index, shares.length),
          merchantName: index === 0 ? "Bench big merchant" : index === 1 && spec.mix === "skewed" ? "Bench webhook merchant" : `Bench merchant ${index}`,
          subscriptions: shares[index] as number,
          seed: `bench-${index}`,
          now: SEED_NOW_MICROS,
          // No outbox events for a million seeded rows: the relay would spend minutes on them.
          captureChanges: false,
          batchSize: 5_000,
        });
        done += shares[index] as number;
        if (index % Math.max(10, Math.floor(shares.length / 10)) === 0 || index < 2)
          say(
            `seeded ${done.toLocaleString("en")} / ${spec.subscriptions.toLocaleString("en")} subscriptions (${Math.round((Date.now() - started) / 1000)} s)`,
          );
      }
    });
  await Promise.all([worker(), worker()]);
}

/**
 * Creates (or reuses) the database for `spec`, applies migrations, gives the service roles
 * `rolePassword` and returns where everything is.
 */
export async function ensureDataset(serverUrl: string, spec: DatasetSpec, say: (line: string) => void): Promise<Dataset> {
  const databaseName = databaseNameOf(spec);
  const adminUrl = databaseUrlFor(serverUrl, databaseName);
  const exists = await withClient(serverUrl, async (client) => {
    const result = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [databaseName]);
    return (result.rowCount ?? 0) > 0;
  });
  let built = false;
  let buildSeconds = 0;
  let reusable = exists && (await readMarker(adminUrl, spec));
  if (reusable) {
    // A dataset another checkout migrated (migrations this one lacks, or its new ones sorted before ones
    // already applied) cannot follow this one's: it is a cache, so it is built again.
    try {
      await migrate({ databaseUrl: adminUrl, log: (line) => say(`migrate: ${line}`) });
    } catch (error) {
      say(`dataset ${databaseName} cannot take this checkout's migrations (${(error as Error).message}): building it again`);
      reusable = false;
    }
  }
  if (!reusable) {
    const started = Date.now();
    say(
      `building dataset ${databaseName}: ${spec.subscriptions.toLocaleString("en")} subscriptions across ${merchantShares(spec).length.toLocaleString("en")} merchants (${spec.mix} mix)`,
    );
    await withClient(serverUrl, async (client) => {
      // An incomplete build (interrupted earlier) is thrown away whole.
      await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(databaseName)} WITH (FORCE)`);
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(databaseName)}`);
    });
    await migrate({ databaseUrl: adminUrl, log: (line) => say(`migrate: ${line}`) });
    await seedAll(adminUrl, spec, say);
    say("VACUUM ANALYZE");
    await withClient(adminUrl, async (client) => {
      await client.query("VACUUM ANALYZE");
      buildSeconds = (Date.now() - started) / 1000;
      await client.query("CREATE TABLE bench_dataset (spec text PRIMARY KEY, built_at timestamptz NOT NULL DEFAULT now(), build_seconds numeric NOT NULL)");
      await client.query("INSERT INTO bench_dataset (spec, build_seconds) VALUES ($1, $2)", [markerText(spec), buildSeconds]);
    });
    built = true;
    say(`dataset built in ${buildSeconds.toFixed(0)} s`);
  } else {
    buildSeconds = await withClient(adminUrl, async (client) =>
      Number((await client.query("SELECT build_seconds FROM bench_dataset")).rows[0]?.build_seconds ?? 0),
    );
    say(`reusing dataset ${databaseName} (built earlier in ${buildSeconds.toFixed(0)} s)`);
  }
  const counts = await withClient(adminUrl, async (client) => {
    const row = (
      await client.query(
        `SELECT (SELECT count(*) FROM merchants)::int AS merchants, (SELECT count(*) FROM subscriptions)::int AS subscriptions,
                (SELECT count(*) FROM charges)::int AS charges, (SELECT count(*) FROM orders)::int AS orders`,
      )
    ).rows[0];
    return { merchants: row.merchants, subscriptions: row.subscriptions, charges: row.charges, orders: row.orders };
  });
  const merchants = merchantShares(spec).length;
  return {
    databaseName,
    adminUrl,
    mix: spec.mix,
    bigMerchantId: merchantId(0, merchants),
    hooksMerchantId: merchantId(spec.mix === "dominant" ? 0 : 1, merchants),
    built,
    buildSeconds,
    counts,
  };
}

/** Each service's own role connection, as deploy/local makes them (the roles are created by migrations). */
export async function roleUrls(adminUrl: string, rolePassword: string): Promise<Record<ServiceName, string>> {
  await withClient(adminUrl, async (client) => {
    for (const role of Object.values(serviceRoles)) {
      const exists = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [role]);
      // Roles are cluster-wide; the local server trusts loopback, so this matters only with password auth.
      if (exists.rowCount) await client.query(`ALTER ROLE ${client.escapeIdentifier(role)} PASSWORD ${client.escapeLiteral(rolePassword)}`);
    }
  });
  return Object.fromEntries(
    (Object.entries(serviceRoles) as Array<[ServiceName, string]>).map(([service, role]) => [service, roleDatabaseUrl(adminUrl, role, rolePassword)]),
  ) as Record<ServiceName, string>;
}
