import { randomBytes } from "node:crypto";
import { createSecretBox, generateSigningSecret, type SecretBox } from "@subdata/webhook";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { json, runCli } from "../cli/run-cli.ts";
import { createFixtures } from "../support/fixtures.ts";
import { createTestDatabase } from "../support/test-database.ts";

// The command walks the whole webhook_endpoints table, so each test gets a database of its own
// (a copy of the run's migrated template) instead of sharing rows with the other test files.
const databases: Array<() => Promise<void>> = [];

afterAll(async () => {
  for (const drop of databases.splice(0)) await drop();
});

async function freshDatabase(): Promise<{ admin: pg.Pool; webhookRoleUrl: string }> {
  const database = await createTestDatabase("reencrypt");
  const admin = new pg.Pool({ connectionString: database.adminUrl, max: 2 });
  admin.on("error", () => {});
  databases.push(async () => {
    await admin.end();
    await database.drop();
  });
  // The webhook service's own role can run it too (as from inside a webhook pod): it may UPDATE endpoints.
  return { admin, webhookRoleUrl: database.roleUrls.webhook };
}

interface StoredEndpoint {
  id: string;
  secret: string;
  previous: string | null;
}

/** Inserts an endpoint whose secrets are sealed by the given boxes; updated_at is set in the past. */
async function insertEndpoint(admin: pg.Pool, merchantId: string, current: SecretBox, previous?: SecretBox): Promise<StoredEndpoint> {
  const id = `we_${randomBytes(12).toString("hex")}`;
  const secret = generateSigningSecret();
  const previousSecret = previous ? generateSigningSecret() : null;
  await admin.query(
    `INSERT INTO webhook_endpoints (id, merchant_id, url, secret_ciphertext, previous_secret_ciphertext, previous_secret_expires_at, updated_at)
     VALUES ($1, $2, 'https://receiver.example/hooks', $3, $4, $5, '2026-01-01 00:00:00+00')`,
    [
      id,
      merchantId,
      current.seal(secret, id),
      previous && previousSecret ? previous.seal(previousSecret, id) : null,
      previous ? "2026-12-31 00:00:00+00" : null,
    ],
  );
  return { id, secret, previous: previousSecret };
}

async function storedRows(admin: pg.Pool) {
  const result = await admin.query<{ id: string; secret_ciphertext: Buffer; previous_secret_ciphertext: Buffer | null; updated_at: Date }>(
    "SELECT id, secret_ciphertext, previous_secret_ciphertext, updated_at FROM webhook_endpoints ORDER BY id",
  );
  return result.rows;
}

const newKey = randomBytes(32).toString("base64");
const oldKey = randomBytes(32).toString("base64");
const newBox = createSecretBox(newKey);
const oldBox = createSecretBox(oldKey);

describe("subdata webhooks reencrypt-secrets (against a real database)", () => {
  it("moves every current and previous secret onto the main key in batches, and a second run changes nothing", async () => {
    const { admin, webhookRoleUrl } = await freshDatabase();
    const merchantId = await createFixtures(admin).merchant();
    const endpoints = [
      await insertEndpoint(admin, merchantId, oldBox),
      await insertEndpoint(admin, merchantId, oldBox, oldBox),
      await insertEndpoint(admin, merchantId, oldBox),
      await insertEndpoint(admin, merchantId, newBox),
      await insertEndpoint(admin, merchantId, newBox, oldBox),
    ];
    const untouched = (await storedRows(admin)).find((row) => row.id === endpoints[3]!.id)!;
    const env = { DATABASE_URL: webhookRoleUrl, SUBDATA_WEBHOOK_SECRET_KEY: newKey, SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS: oldKey };

    // Batches of 2: the walk has to carry on past two full batches to reach the fifth endpoint.
    const run = await runCli(["webhooks", "reencrypt-secrets", "--batch-size", "2", "--json"], { env });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(json(run)).toEqual({ endpoints: 5, reencrypted: 5, already_current: 2, unreadable: 0 });

    // The main key alone now opens every secret, and each is the one it was.
    const rows = await storedRows(admin);
    for (const endpoint of endpoints) {
      const row = rows.find((candidate) => candidate.id === endpoint.id)!;
      expect(newBox.open(row.secret_ciphertext, endpoint.id)).toBe(endpoint.secret);
      expect(row.previous_secret_ciphertext === null ? null : newBox.open(row.previous_secret_ciphertext, endpoint.id)).toBe(endpoint.previous);
      expect(row.updated_at.toISOString()).toBe("2026-01-01T00:00:00.000Z");
    }
    // A secret already under the main key is not rewritten.
    expect(rows.find((row) => row.id === endpoints[3]!.id)!.secret_ciphertext).toEqual(untouched.secret_ciphertext);

    const again = await runCli(["webhooks", "reencrypt-secrets", "--json"], { env });
    expect(again.code).toBe(0);
    expect(json(again)).toEqual({ endpoints: 5, reencrypted: 0, already_current: 7, unreadable: 0 });
    expect(await storedRows(admin)).toEqual(rows);
  });

  it("names endpoints whose secret no configured key opens and exits 1, having moved the rest", async () => {
    const { admin, webhookRoleUrl } = await freshDatabase();
    const merchantId = await createFixtures(admin).merchant();
    const movable = await insertEndpoint(admin, merchantId, oldBox);
    const lost = await insertEndpoint(admin, merchantId, createSecretBox(randomBytes(32).toString("base64")));
    const before = (await storedRows(admin)).find((row) => row.id === lost.id)!;

    const run = await runCli(["webhooks", "reencrypt-secrets", "--json"], {
      env: { DATABASE_URL: webhookRoleUrl, SUBDATA_WEBHOOK_SECRET_KEY: newKey, SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS: oldKey },
    });
    expect(run.code).toBe(1);
    const error = json<{ error: { code: string; message: string } }>(run).error;
    expect(error.code).toBe("config");
    expect(error.message).toContain(`1 endpoint(s) have a secret that no configured key opens (${lost.id})`);
    expect(error.message).toContain("1 secret(s) re-encrypted");

    const rows = await storedRows(admin);
    expect(newBox.open(rows.find((row) => row.id === movable.id)!.secret_ciphertext, movable.id)).toBe(movable.secret);
    expect(rows.find((row) => row.id === lost.id)!.secret_ciphertext).toEqual(before.secret_ciphertext);
  });

  it("refuses a malformed previous key before touching the database, naming the variable and not the key", async () => {
    const short = randomBytes(16).toString("base64");
    const run = await runCli(["webhooks", "reencrypt-secrets", "--json"], {
      // Nothing listens there: the keys are checked first.
      env: {
        DATABASE_URL: "postgres://nobody@127.0.0.1:1/none",
        SUBDATA_WEBHOOK_SECRET_KEY: newKey,
        SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS: `${oldKey},${short}`,
      },
    });
    expect(run.code).toBe(1);
    const error = json<{ error: { code: string; message: string } }>(run).error;
    expect(error).toEqual({ code: "config", message: expect.stringContaining("SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS is invalid: item 2 of 2") });
    expect(run.stdout + run.stderr).not.toContain(short);
    expect(run.stdout + run.stderr).not.toContain(oldKey);
  });
});
