import type pg from "pg";
import { MirrorError } from "./mirror-error.ts";
import { TABLES, type Column, type ColumnType, type TableName } from "./tables.ts";

/** What information_schema.columns calls each of our types. */
const INFORMATION_SCHEMA_TYPE: Record<ColumnType, string> = {
  text: "text",
  integer: "integer",
  bigint: "bigint",
  numeric: "numeric",
  timestamptz: "timestamp with time zone",
  boolean: "boolean",
};

export const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Schema names the mirror accepts: plain identifiers, so messages and psql sessions need no quoting. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Constraints and defaults beyond one column per field. */
const EXTRAS: Record<TableName, { columnSql?: Partial<Record<string, string>>; constraints: string[]; indexes: string[] }> = {
  subscriptions: { constraints: ["PRIMARY KEY (id)"], indexes: [] },
  charges: { constraints: ["PRIMARY KEY (id)"], indexes: ["(subscription_id)"] },
  orders: { constraints: ["PRIMARY KEY (id)"], indexes: ["(subscription_id)"] },
  // No foreign key to orders: the writer replaces and deletes an order's items itself, and a key's
  // per-row check would cost about a third of a walk page's write.
  order_line_items: { constraints: ["PRIMARY KEY (order_id, position)"], indexes: [] },
  sync_state: {
    columnSql: {
      singleton: "DEFAULT true CHECK (singleton)",
      phase: "CHECK (phase IN ('walk', 'feed'))",
      subscriptions_walked: "DEFAULT false",
      charges_walked: "DEFAULT false",
      orders_walked: "DEFAULT false",
      events_applied: "DEFAULT 0",
      started_at: "DEFAULT now()",
      updated_at: "DEFAULT now()",
    },
    constraints: ["PRIMARY KEY (singleton)"],
    indexes: [],
  },
};

function createTableSql(schema: string, table: TableName): string[] {
  const q = quoteIdentifier(schema);
  const extras = EXTRAS[table];
  const columns = (TABLES[table] as readonly Column[]).map(
    (column) =>
      `${quoteIdentifier(column.name)} ${column.type}${column.nullable ? "" : " NOT NULL"}${extras.columnSql?.[column.name] ? ` ${extras.columnSql[column.name]}` : ""}`,
  );
  const constraints = extras.constraints;
  return [
    `CREATE TABLE IF NOT EXISTS ${q}.${table} (\n  ${[...columns, ...constraints].join(",\n  ")}\n)`,
    ...extras.indexes.map((index) => `CREATE INDEX IF NOT EXISTS ${table}_${index.replace(/\W/g, "")} ON ${q}.${table} ${index}`),
  ];
}

/** Each table's differences from the expected shape, in words; empty when it matches. */
export function shapeDifferences(table: TableName, actual: ReadonlyArray<{ column_name: string; data_type: string; is_nullable: string }>): string[] {
  const expected = TABLES[table] as readonly Column[];
  const byName = new Map(actual.map((row) => [row.column_name, row]));
  const differences: string[] = [];
  for (const column of expected) {
    const found = byName.get(column.name);
    if (!found) {
      differences.push(`no column ${column.name}`);
      continue;
    }
    if (found.data_type !== INFORMATION_SCHEMA_TYPE[column.type])
      differences.push(`${column.name} is ${found.data_type}, not ${INFORMATION_SCHEMA_TYPE[column.type]}`);
    if ((found.is_nullable === "YES") !== column.nullable) differences.push(`${column.name} is ${column.nullable ? "NOT NULL" : "nullable"}`);
  }
  const known = new Set(expected.map((column) => column.name));
  for (const row of actual) if (!known.has(row.column_name)) differences.push(`unexpected column ${row.column_name}`);
  return differences;
}

/**
 * Creates the schema and whichever of its tables are absent; refuses, before changing anything, a
 * schema whose existing tables have another shape (a table of the same name made by someone else, or
 * by another version of the mirror).
 */
export async function prepareTargetSchema(db: pg.ClientBase, schema: string): Promise<void> {
  const existing = await db.query<{ table_name: string; column_name: string; data_type: string; is_nullable: string }>(
    `SELECT table_name, column_name, data_type, is_nullable
       FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = ANY($2::text[])
      ORDER BY table_name, ordinal_position`,
    [schema, Object.keys(TABLES)],
  );
  const byTable = new Map<string, typeof existing.rows>();
  for (const row of existing.rows) byTable.set(row.table_name, [...(byTable.get(row.table_name) ?? []), row]);
  for (const table of Object.keys(TABLES) as TableName[]) {
    const columns = byTable.get(table);
    if (!columns) continue;
    const differences = shapeDifferences(table, columns);
    if (differences.length > 0) {
      throw new MirrorError(
        `the target schema ${schema} has a table ${table} of another shape (${differences.slice(0, 3).join("; ")}${differences.length > 3 ? "; …" : ""}): ` +
          `mirror into another --schema, or drop that table`,
        "target_schema",
      );
    }
  }
  await db.query("BEGIN");
  try {
    await db.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(schema)}`);
    for (const table of Object.keys(TABLES) as TableName[]) {
      for (const statement of createTableSql(schema, table)) await db.query(statement);
    }
    await db.query("COMMIT");
  } catch (error) {
    await db.query("ROLLBACK").catch(() => {});
    throw error;
  }
}

/** Empties the copy and its state (--resync): the next run starts from a fresh head and walk. */
export async function clearTarget(db: pg.ClientBase, schema: string): Promise<void> {
  const q = quoteIdentifier(schema);
  await db.query(`TRUNCATE ${q}.order_line_items, ${q}.orders, ${q}.charges, ${q}.subscriptions, ${q}.sync_state`);
}
