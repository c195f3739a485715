import { migrate } from "@subdata/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabaseBefore, type DatabaseBefore } from "../support/database-before.ts";

// Endpoints registered while an empty event_types meant "every subscription event": once it means
// every event type, they are given the subscription types explicitly and so receive what they did.

const MIGRATION = "20261126000400000_endpoint_event_types";
let database: DatabaseBefore;

beforeAll(async () => {
  database = await createDatabaseBefore(MIGRATION);
});
afterAll(async () => {
  await database?.drop();
});

describe("the migration to 'empty means every event type'", () => {
  it("writes the three subscription types into endpoints with an empty list and leaves chosen lists alone", async () => {
    const { db } = database;
    await db.query("INSERT INTO merchants (id, name) VALUES ('mer_types', 'Types')");
    const endpoint = (id: string, types: string[]) =>
      db.query(
        "INSERT INTO webhook_endpoints (id, merchant_id, url, event_types, secret_ciphertext) VALUES ($1, 'mer_types', 'https://example.com/h', $2, '\\x00')",
        [id, types],
      );
    await endpoint("we_all", []);
    await endpoint("we_chosen", ["subscription.deleted"]);

    expect(await migrate({ databaseUrl: database.url })).toContain(MIGRATION);

    const rows = await db.query<{ id: string; event_types: string[] }>("SELECT id, event_types FROM webhook_endpoints ORDER BY id");
    expect(rows.rows).toEqual([
      { id: "we_all", event_types: ["subscription.created", "subscription.updated", "subscription.deleted"] },
      { id: "we_chosen", event_types: ["subscription.deleted"] },
    ]);
    // From now on an empty list is stored as such and means every type.
    await endpoint("we_new", []);
    expect((await db.query("SELECT event_types FROM webhook_endpoints WHERE id = 'we_new'")).rows[0]).toEqual({ event_types: [] });
  });
});
