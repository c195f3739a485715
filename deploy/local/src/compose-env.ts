import { randomBytes } from "node:crypto";
import { CALLERS, callerHashVariable, callerTokenVariable, tokenSha256 } from "@subdata/runtime";
import { readDevEnvFile, writeDevEnvFile } from "./dev-env-file.ts";

const hex = () => randomBytes(24).toString("hex");
const token = () => randomBytes(32).toString("base64url");

/** Every secret deploy/compose.yaml takes from deploy/.env except the callers' hashes, with its generator. */
const generators: Readonly<Record<string, () => string>> = {
  // Database passwords end up inside postgres:// URLs: hex needs no escaping.
  POSTGRES_PASSWORD: hex,
  SUBDATA_QUERY_DB_PASSWORD: hex,
  SUBDATA_AUTH_DB_PASSWORD: hex,
  SUBDATA_WEBHOOK_DB_PASSWORD: hex,
  SUBDATA_CONSOLE_DB_PASSWORD: hex,
  ...Object.fromEntries(CALLERS.map((caller) => [callerTokenVariable(caller), token])),
  SUBDATA_PAGE_TOKEN_SECRET: token,
  SUBDATA_NATS_RELAY_PASSWORD: hex,
  SUBDATA_NATS_WEBHOOK_PASSWORD: hex,
  SUBDATA_NATS_AUTH_PASSWORD: hex,
  SUBDATA_NATS_GATEWAY_PASSWORD: hex,
  SUBDATA_WEBHOOK_SECRET_KEY: () => randomBytes(32).toString("base64"),
};

/**
 * The values of deploy/.env: each one already in `existing` is kept (a rerun changes nothing, and a
 * hash list edited for a rotation stays as it is), each missing secret is generated, and each missing
 * SUBDATA_<CALLER>_TOKEN_SHA256 is the SHA-256 of that caller's token.
 */
export function composeEnvironment(existing: Readonly<Record<string, string>>): { values: Record<string, string>; created: string[] } {
  const values: Record<string, string> = { ...existing };
  const created: string[] = [];
  for (const [name, generate] of Object.entries(generators)) {
    if (values[name]) continue;
    values[name] = generate();
    created.push(name);
  }
  for (const caller of CALLERS) {
    const name = callerHashVariable(caller);
    if (values[name]) continue;
    values[name] = tokenSha256(values[callerTokenVariable(caller)]!).toString("hex");
    created.push(name);
  }
  return { values, created };
}

/** `npm run compose:env`: writes deploy/.env (mode 0600) for deploy/compose.yaml, generating what is missing. */
export function writeComposeEnv(path: string): string[] {
  const { values, created } = composeEnvironment(readDevEnvFile(path));
  writeDevEnvFile(path, values, [
    "deploy/.env for deploy/compose.yaml, written by `npm run compose:env`: random secrets, generated once.",
    "A rerun keeps every value and adds what is missing. Rotation: docs/operations.md.",
  ]);
  return created;
}
