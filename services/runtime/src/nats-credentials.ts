import { z } from "zod";
import { ConfigError, env } from "./config.ts";

/**
 * A process's own NATS user: NATS_USER and NATS_PASSWORD, given together. The server's permissions
 * for that user (docs/operations.md, "NATS") allow only the subjects the process needs. Optional
 * outside production so the tests and a developer's unauthenticated NATS keep working; with
 * NODE_ENV=production (the image sets it) both are required, because a NATS that lets anyone in lets
 * anyone publish events, read every tenant's events and delete the stream.
 */
export const natsCredentialShape = {
  NODE_ENV: z.string().optional(),
  NATS_USER: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, "must be a NATS user name (letters, digits, '_', '.', '-')")
    .optional(),
  NATS_PASSWORD: env.secret().optional(),
} as const;

export interface NatsCredentials {
  user: string;
  pass: string;
}

/**
 * The credentials of a loaded config, or undefined when none are set. Throws a ConfigError naming the
 * variable when only one of the pair is set, or neither in production.
 */
export function natsCredentials(config: {
  NODE_ENV?: string | undefined;
  NATS_USER?: string | undefined;
  NATS_PASSWORD?: string | undefined;
}): NatsCredentials | undefined {
  const { NATS_USER: user, NATS_PASSWORD: pass } = config;
  if (user !== undefined && pass !== undefined) return { user, pass };
  if (user !== undefined) throw new ConfigError(["NATS_PASSWORD is not set: NATS_USER is set, and a NATS user needs its password"]);
  if (pass !== undefined) throw new ConfigError(["NATS_USER is not set: NATS_PASSWORD is set, and names no user"]);
  if (config.NODE_ENV === "production") {
    throw new ConfigError([
      "NATS_USER is not set: with NODE_ENV=production this process must authenticate to NATS (NATS_USER and NATS_PASSWORD; see docs/operations.md)",
    ]);
  }
  return undefined;
}
