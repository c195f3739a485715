import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { migrate, roleDatabaseUrl, serviceRoles } from "@subdata/db";
import pg from "pg";
import type {} from "vitest";
import type { TestProject } from "vitest/node";

/**
 * Real infrastructure, once per run. Two paths:
 * - DATABASE_URL / NATS_URL from the environment, defaulting to the local services on this machine
 *   kind (Postgres 127.0.0.1:5432 as postgres, NATS 127.0.0.1:4222 with JetStream);
 * - testcontainers (postgres:15, nats:2.9 -js) when neither variable is set and a Docker engine answers.
 * Either way the run gets a fresh database (migrated), a migrated template that tests copy when they need
 * a database of their own (test/support/test-database.ts), and a run id that tests use to name fresh
 * JetStream streams, because the local services persist between runs.
 */

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser connection to this run's fresh database (for fixtures and assertions). */
    adminDatabaseUrl: string;
    /** Each service role's connection to the same database. */
    roleDatabaseUrls: Record<keyof typeof serviceRoles, string>;
    /** A migrated database nobody connects to: CREATE DATABASE … TEMPLATE copies it. */
    templateDatabaseName: string;
    natsUrl: string;
    /** Unique per run: prefix stream, consumer and subject names with it. */
    runId: string;
  }
}

const LOCAL_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/postgres";
const LOCAL_NATS_URL = "nats://127.0.0.1:4222";

async function dockerEngineAnswers(): Promise<boolean> {
  if (!process.env.DOCKER_HOST && !existsSync("/var/run/docker.sock")) return false;
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const teardown: Array<() => Promise<void>> = [];
  let serverUrl = process.env.DATABASE_URL;
  let natsUrl = process.env.NATS_URL;
  // Container roles log in with passwords; the local trust-auth server ignores them.
  const rolePassword = randomBytes(12).toString("hex");

  if (!serverUrl && !natsUrl && (await dockerEngineAnswers())) {
    const { PostgreSqlContainer } = await import("@testcontainers/postgresql");
    const { GenericContainer, Wait } = await import("testcontainers");
    const postgres = await new PostgreSqlContainer("postgres:15").start();
    const nats = await new GenericContainer("nats:2.9")
      .withCommand(["-js"])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start();
    serverUrl = postgres.getConnectionUri();
    natsUrl = `nats://${nats.getHost()}:${nats.getMappedPort(4222)}`;
    teardown.push(async () => {
      await nats.stop();
      await postgres.stop();
    });
  }
  serverUrl ??= LOCAL_DATABASE_URL;
  natsUrl ??= LOCAL_NATS_URL;

  const runId = `t${Date.now().toString(36)}${randomBytes(3).toString("hex")}`;
  const databaseName = `subdata_test_${runId}`;
  const templateName = `${databaseName}_template`;
  const admin = new pg.Client({ connectionString: serverUrl });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(
      `integration tests need Postgres: could not connect to ${new URL(serverUrl).host} (set DATABASE_URL, ` +
        `start the local server, or run a Docker engine for testcontainers): ${(error as Error).message}`,
    );
  }
  await admin.query(`CREATE DATABASE ${templateName}`);
  const templateUrl = new URL(serverUrl);
  templateUrl.pathname = `/${templateName}`;
  await migrate({ databaseUrl: templateUrl.toString() });
  await copyWhenClosed(admin, templateName, databaseName);
  const adminUrl = new URL(serverUrl);
  adminUrl.pathname = `/${databaseName}`;
  const adminDatabaseUrl = adminUrl.toString();
  for (const role of Object.values(serviceRoles)) {
    const exists = await admin.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [role]);
    if (exists.rowCount) await admin.query(`ALTER ROLE ${role} PASSWORD '${rolePassword}'`);
  }

  project.provide("adminDatabaseUrl", adminDatabaseUrl);
  project.provide("roleDatabaseUrls", {
    query: roleDatabaseUrl(adminDatabaseUrl, serviceRoles.query, rolePassword),
    auth: roleDatabaseUrl(adminDatabaseUrl, serviceRoles.auth, rolePassword),
    webhook: roleDatabaseUrl(adminDatabaseUrl, serviceRoles.webhook, rolePassword),
    maintain: roleDatabaseUrl(adminDatabaseUrl, serviceRoles.maintain, rolePassword),
    console: roleDatabaseUrl(adminDatabaseUrl, serviceRoles.console, rolePassword),
  });
  project.provide("templateDatabaseName", templateName);
  project.provide("natsUrl", natsUrl);
  project.provide("runId", runId);

  return async () => {
    if (!process.env.SUBDATA_KEEP_TEST_DATABASE) {
      // The run's database, the template, and any database of a test that did not drop its own.
      const { rows } = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE starts_with(datname, $1)", [databaseName]);
      for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    }
    await admin.end();
    for (const step of teardown) await step();
  };
}

/** CREATE DATABASE … TEMPLATE refuses while a session on the template is still closing (migrate's own). */
async function copyWhenClosed(admin: pg.Client, template: string, name: string): Promise<void> {
  for (let tries = 0; ; tries++) {
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== "55006" || tries >= 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
