import { randomBytes } from "node:crypto";
import { defaultNatsUser, type NatsUsers } from "@subdata/events";
import { type Caller, CALLERS, callerHashVariable, tokenSha256 } from "@subdata/runtime";
import { readDevEnvFile, writeDevEnvFile } from "./dev-env-file.ts";

/**
 * The secrets of the local stack. Only deploy/local invents secrets: production config has no
 * defaults. They are generated once and kept in .subdata/dev.env, so restarts keep page tokens,
 * webhook secrets at rest and database passwords valid.
 */
export interface DevSecrets {
  /** Each internal caller's own token (docs/security.md); the servers get only their SHA-256. */
  SUBDATA_GATEWAY_TOKEN: string;
  SUBDATA_CONSOLE_TOKEN: string;
  /** The app's and admin tools' token: the launcher's first run (demo key, console link) uses it. */
  SUBDATA_APP_TOKEN: string;
  /** The CLI's token: `npx subdata keys|webhooks|console …` reads it from this file. */
  SUBDATA_CLI_TOKEN: string;
  SUBDATA_PAGE_TOKEN_SECRET: string;
  /** base64 of 32 random bytes: the key that encrypts webhook signing secrets at rest. */
  SUBDATA_WEBHOOK_SECRET_KEY: string;
  /** The embedded Postgres superuser's password (unused with DATABASE_URL). */
  SUBDATA_POSTGRES_PASSWORD: string;
  SUBDATA_QUERY_DB_PASSWORD: string;
  SUBDATA_AUTH_DB_PASSWORD: string;
  SUBDATA_WEBHOOK_DB_PASSWORD: string;
  SUBDATA_MAINTAIN_DB_PASSWORD: string;
  SUBDATA_CONSOLE_DB_PASSWORD: string;
  /** Each NATS user's password, for the nats-server the launcher starts (nats.ts) and the process that logs in as it. */
  SUBDATA_NATS_RELAY_PASSWORD: string;
  SUBDATA_NATS_WEBHOOK_PASSWORD: string;
  SUBDATA_NATS_AUTH_PASSWORD: string;
  SUBDATA_NATS_GATEWAY_PASSWORD: string;
}

const generators: { [K in keyof DevSecrets]: () => string } = {
  SUBDATA_GATEWAY_TOKEN: () => randomBytes(32).toString("base64url"),
  SUBDATA_CONSOLE_TOKEN: () => randomBytes(32).toString("base64url"),
  SUBDATA_APP_TOKEN: () => randomBytes(32).toString("base64url"),
  SUBDATA_CLI_TOKEN: () => randomBytes(32).toString("base64url"),
  SUBDATA_PAGE_TOKEN_SECRET: () => randomBytes(32).toString("base64url"),
  SUBDATA_WEBHOOK_SECRET_KEY: () => randomBytes(32).toString("base64"),
  // Hex keeps passwords safe inside connection strings without escaping.
  SUBDATA_POSTGRES_PASSWORD: () => randomBytes(18).toString("hex"),
  SUBDATA_QUERY_DB_PASSWORD: () => randomBytes(18).toString("hex"),
  SUBDATA_AUTH_DB_PASSWORD: () => randomBytes(18).toString("hex"),
  SUBDATA_WEBHOOK_DB_PASSWORD: () => randomBytes(18).toString("hex"),
  SUBDATA_MAINTAIN_DB_PASSWORD: () => randomBytes(18).toString("hex"),
  SUBDATA_CONSOLE_DB_PASSWORD: () => randomBytes(18).toString("hex"),
  // base64url: no quoting trouble in the nats-server config.
  SUBDATA_NATS_RELAY_PASSWORD: () => randomBytes(32).toString("base64url"),
  SUBDATA_NATS_WEBHOOK_PASSWORD: () => randomBytes(32).toString("base64url"),
  SUBDATA_NATS_AUTH_PASSWORD: () => randomBytes(32).toString("base64url"),
  SUBDATA_NATS_GATEWAY_PASSWORD: () => randomBytes(32).toString("base64url"),
};

/** What every server of the local stack holds: the SHA-256 of each caller's token (SUBDATA_<CALLER>_TOKEN_SHA256). */
export function devCallerHashes(secrets: DevSecrets): Record<string, string> {
  const tokens: Record<Caller, string> = {
    gateway: secrets.SUBDATA_GATEWAY_TOKEN,
    console: secrets.SUBDATA_CONSOLE_TOKEN,
    app: secrets.SUBDATA_APP_TOKEN,
    cli: secrets.SUBDATA_CLI_TOKEN,
  };
  return Object.fromEntries(CALLERS.map((caller) => [callerHashVariable(caller), tokenSha256(tokens[caller]).toString("hex")]));
}

/** The NATS users of the local stack: each process's own, with the password generated for it. */
export function devNatsUsers(secrets: DevSecrets): NatsUsers {
  return {
    relay: { user: defaultNatsUser("relay"), password: secrets.SUBDATA_NATS_RELAY_PASSWORD },
    webhook: { user: defaultNatsUser("webhook"), password: secrets.SUBDATA_NATS_WEBHOOK_PASSWORD },
    auth: { user: defaultNatsUser("auth"), password: secrets.SUBDATA_NATS_AUTH_PASSWORD },
    gateway: { user: defaultNatsUser("gateway"), password: secrets.SUBDATA_NATS_GATEWAY_PASSWORD },
  };
}

export const devSecretNames = Object.keys(generators) as Array<keyof DevSecrets>;

/**
 * Reuses each secret found in the dev.env file at `path` and generates the missing ones. Returns
 * them with `created` naming what was new; the caller persists them (writeDevEnv).
 */
export function loadDevSecrets(path: string): { secrets: DevSecrets; created: Array<keyof DevSecrets> } {
  const existing = readDevEnvFile(path);
  const created: Array<keyof DevSecrets> = [];
  const secrets = {} as DevSecrets;
  for (const name of devSecretNames) {
    const value = existing[name];
    if (value) {
      secrets[name] = value;
    } else {
      secrets[name] = generators[name]();
      created.push(name);
    }
  }
  return { secrets, created };
}

/**
 * Persists the secrets plus where the running stack listens (DATABASE_URL is the admin connection),
 * so `npx subdata …` works against it with no environment set.
 */
export function saveDevEnv(path: string, secrets: DevSecrets, endpoints: Record<string, string>): void {
  writeDevEnvFile(path, { ...secrets, ...endpoints }, [
    "Written by `npm start` (deploy/local). Local development only: random secrets, generated once.",
    "The CLI reads this file when a variable is not in the environment. Delete the folder to reset.",
  ]);
}
