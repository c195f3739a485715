import type { Charge, Event, Order, Subscription } from "@subdata/client";
import type pg from "pg";
import { MirrorError } from "./mirror-error.ts";
import { chargeColumns, lineItemColumns, orderColumns, subscriptionColumns, type Column, type Resource, type TableName } from "./tables.ts";
import { quoteIdentifier } from "./target-schema.ts";

/**
 * Every write to the copy. Each page is one transaction: its rows, and the cursor that follows it in
 * sync_state. The state row is updated only if it still holds the cursor the page was read from, so a
 * page can never be applied twice (by a restart, or by a second mirror on the same schema).
 */

export interface SyncState {
  api_url: string;
  phase: "walk" | "feed";
  feed_cursor: string;
  subscriptions_cursor: string | null;
  subscriptions_walked: boolean;
  charges_cursor: string | null;
  charges_walked: boolean;
  orders_cursor: string | null;
  orders_walked: boolean;
  events_applied: string;
}

export type ResourceObject = { subscriptions: Subscription; charges: Charge; orders: Order };

export interface TargetWriter {
  readState(): Promise<SyncState | undefined>;
  /** The first state: walking, with the feed's head to follow from afterwards. */
  start(apiUrl: string, headCursor: string): Promise<void>;
  /** One page of a list walk; `nextCursor` null marks that list as walked. */
  applyWalkPage<R extends Resource>(resource: R, items: ResourceObject[R][], from: string | null, nextCursor: string | null): Promise<void>;
  /** All three lists walked: the copy now follows the feed. */
  finishWalk(): Promise<void>;
  /** One page of the feed: its changes and its next_cursor. */
  applyFeedPage(events: readonly Event[], from: string, nextCursor: string): Promise<void>;
  rowCounts(): Promise<Record<Exclude<TableName, "sync_state">, number>>;
}

const RESOURCE_OF_EVENT: Record<string, Resource> = { subscription: "subscriptions", charge: "charges", order: "orders" };

function upsertSql(schema: string, table: Resource, columns: readonly Column[], returning = ""): string {
  const target = `${quoteIdentifier(schema)}.${table}`;
  const names = columns.map((column) => quoteIdentifier(column.name));
  const updates = columns
    .filter((column) => column.name !== "id")
    .map((column) => `${quoteIdentifier(column.name)} = EXCLUDED.${quoteIdentifier(column.name)}`);
  // Only a newer version replaces a row: a walk page and a replayed event carry the same or older state.
  return (
    `INSERT INTO ${target} (${names.join(", ")})\n` +
    `SELECT ${columns.map((column) => column.from).join(", ")} FROM jsonb_array_elements($1::jsonb) AS o\n` +
    `ON CONFLICT (id) DO UPDATE SET ${updates.join(", ")}\n` +
    `WHERE ${target}.version < EXCLUDED.version` +
    (returning ? `\nRETURNING ${returning}` : "")
  );
}

const lineItemNames = lineItemColumns.map((column) => quoteIdentifier(column.name)).join(", ");
const lineItemValues = lineItemColumns.map((column) => column.from).join(", ");
const lineItemsOf = "CROSS JOIN LATERAL jsonb_array_elements(o->'line_items') WITH ORDINALITY AS li(item, ordinality)";

/**
 * Orders and, in the same statement, the line items of the orders it inserted. Rows it replaced (an
 * update: xmax is set on a row ON CONFLICT DO UPDATE wrote, 0 on a fresh insert) come back, and their
 * line items are replaced by the two statements below: inserting them here would collide with the
 * old items, which one statement cannot delete first.
 */
function orderUpsertSql(schema: string): string {
  const q = quoteIdentifier(schema);
  const upsert = upsertSql(schema, "orders", orderColumns, "id, xmax <> 0 AS replaced");
  return (
    `WITH written AS (\n${upsert}\n), items AS (\n` +
    `INSERT INTO ${q}.order_line_items (${lineItemNames})\n` +
    `SELECT ${lineItemValues}\n  FROM jsonb_array_elements($1::jsonb) AS o\n` +
    `  JOIN written ON written.id = o->>'id' AND NOT written.replaced\n  ${lineItemsOf}\n)\n` +
    `SELECT id FROM written WHERE replaced`
  );
}

function replaceLineItemsSql(schema: string): string {
  return (
    `INSERT INTO ${quoteIdentifier(schema)}.order_line_items (${lineItemNames})\n` +
    `SELECT ${lineItemValues}\n  FROM jsonb_array_elements($1::jsonb) AS o\n  ${lineItemsOf}\n` +
    ` WHERE o->>'id' = ANY($2::text[])`
  );
}

const COLUMNS: Record<Resource, readonly Column[]> = { subscriptions: subscriptionColumns, charges: chargeColumns, orders: orderColumns };

export function createTargetWriter(pool: pg.Pool, schema: string): TargetWriter {
  const q = quoteIdentifier(schema);
  const upserts = Object.fromEntries(
    (Object.keys(COLUMNS) as Resource[]).map((resource) => [resource, upsertSql(schema, resource, COLUMNS[resource])]),
  ) as Record<Resource, string>;
  const upsertOrders = orderUpsertSql(schema);
  const replaceLineItems = replaceLineItemsSql(schema);

  async function transaction(work: (db: pg.PoolClient) => Promise<void>): Promise<void> {
    const db = await pool.connect();
    try {
      // Not waiting for the WAL flush is safe here: a target crash loses the last pages together with the
      // cursors committed with them, and the next run reads those pages again.
      await db.query("BEGIN; SET LOCAL synchronous_commit = off");
      await work(db);
      await db.query("COMMIT");
    } catch (error) {
      await db.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      db.release();
    }
  }

  /** Upserts objects (one per id), orders with their line items replaced whole. */
  async function upsert(db: pg.ClientBase, resource: Resource, objects: readonly object[]): Promise<void> {
    if (objects.length === 0) return;
    const json = JSON.stringify(objects);
    if (resource !== "orders") {
      await db.query({ name: `mirror-upsert-${schema}-${resource}`, text: upserts[resource], values: [json] });
      return;
    }
    const replaced = await db.query<{ id: string }>({ name: `mirror-upsert-${schema}-orders`, text: upsertOrders, values: [json] });
    if (replaced.rows.length === 0) return;
    const ids = replaced.rows.map((row) => row.id);
    await db.query(`DELETE FROM ${q}.order_line_items WHERE order_id = ANY($1::text[])`, [ids]);
    await db.query({ name: `mirror-replace-line-items-${schema}`, text: replaceLineItems, values: [json, ids] });
  }

  async function remove(db: pg.ClientBase, resource: Resource, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    if (resource === "orders") await db.query(`DELETE FROM ${q}.order_line_items WHERE order_id = ANY($1::text[])`, [ids]);
    await db.query(`DELETE FROM ${q}.${resource} WHERE id = ANY($1::text[])`, [ids]);
  }

  async function moveState(db: pg.ClientBase, set: string, guard: string, values: unknown[], what: string): Promise<void> {
    const moved = await db.query(`UPDATE ${q}.sync_state SET ${set}, updated_at = now() WHERE ${guard}`, values);
    if (moved.rowCount !== 1) {
      throw new MirrorError(`sync_state no longer holds the cursor this ${what} was read from: another mirror is writing into schema ${schema}`, "locked");
    }
  }

  return {
    async readState() {
      const result = await pool.query<SyncState>(
        `SELECT api_url, phase, feed_cursor, subscriptions_cursor, subscriptions_walked, charges_cursor, charges_walked,
                orders_cursor, orders_walked, events_applied::text AS events_applied
           FROM ${q}.sync_state`,
      );
      return result.rows[0];
    },

    async start(apiUrl, headCursor) {
      await pool.query(`INSERT INTO ${q}.sync_state (api_url, phase, feed_cursor) VALUES ($1, 'walk', $2)`, [apiUrl, headCursor]);
    },

    async applyWalkPage(resource, items, from, nextCursor) {
      await transaction(async (db) => {
        await upsert(db, resource, items);
        await moveState(
          db,
          `${resource}_cursor = $1, ${resource}_walked = $2`,
          `${resource}_cursor IS NOT DISTINCT FROM $3 AND NOT ${resource}_walked`,
          [nextCursor, nextCursor === null, from],
          `page of ${resource}`,
        );
      });
    },

    async finishWalk() {
      await pool.query(`UPDATE ${q}.sync_state SET phase = 'feed', updated_at = now() WHERE phase = 'walk'`);
    },

    async applyFeedPage(events, from, nextCursor) {
      // Per object, only its last event in the page counts (a page can hold an object's create, updates
      // and delete); events apply in feed order, so the last one is the newest state.
      const last = new Map<string, { resource: Resource; deleted: boolean; object: { id: string } }>();
      for (const event of events) {
        const [kind, action] = event.type.split(".") as [string, string];
        const resource = RESOURCE_OF_EVENT[kind];
        if (!resource) continue; // a kind of object this copy does not keep
        const object = event.data.object as { id: string };
        last.set(`${resource}:${object.id}`, { resource, deleted: action === "deleted", object });
      }
      await transaction(async (db) => {
        for (const resource of Object.keys(COLUMNS) as Resource[]) {
          const mine = [...last.values()].filter((entry) => entry.resource === resource);
          await remove(
            db,
            resource,
            mine.filter((entry) => entry.deleted).map((entry) => entry.object.id),
          );
          await upsert(
            db,
            resource,
            mine.filter((entry) => !entry.deleted).map((entry) => entry.object),
          );
        }
        await moveState(
          db,
          "feed_cursor = $1, events_applied = events_applied + $2",
          "feed_cursor = $3 AND phase = 'feed'",
          [nextCursor, events.length, from],
          "feed page",
        );
      });
    },

    async rowCounts() {
      const result = await pool.query<{ subscriptions: string; charges: string; orders: string; order_line_items: string }>(
        `SELECT (SELECT count(*) FROM ${q}.subscriptions) AS subscriptions, (SELECT count(*) FROM ${q}.charges) AS charges,
                (SELECT count(*) FROM ${q}.orders) AS orders, (SELECT count(*) FROM ${q}.order_line_items) AS order_line_items`,
      );
      const row = result.rows[0]!;
      return {
        subscriptions: Number(row.subscriptions),
        charges: Number(row.charges),
        orders: Number(row.orders),
        order_line_items: Number(row.order_line_items),
      };
    },
  };
}
