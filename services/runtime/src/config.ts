import { z } from "zod";

/**
 * Thrown when the environment does not satisfy a service's config schema. The message names every bad
 * variable and why, so an operator can fix the deployment without reading code.
 */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  ${problems.join("\n  ")}`);
    this.name = "ConfigError";
  }
}

/**
 * Validates `env` against a schema whose keys are the environment variable names, and returns the
 * typed, frozen result. Throws ConfigError naming each bad variable. Never logs values.
 */
export function loadConfig<S extends z.ZodRawShape>(shape: S, env: NodeJS.ProcessEnv): Readonly<z.infer<z.ZodObject<S>>> {
  const result = z.object(shape).safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const variable = issue.path.join(".") || "(environment)";
      const received = env[variable] === undefined ? "is not set" : "is invalid";
      return `${variable} ${received}: ${issue.message}`;
    });
    throw new ConfigError(problems);
  }
  return Object.freeze(result.data);
}

/**
 * For main.ts: runs the config loader and, on a ConfigError, prints the problems (variable names, never
 * values) and exits 1 — an operator needs the list, not a stack trace. Other errors propagate.
 */
export function loadConfigOrExit<T>(process_: string, load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${process_}: ${error.message}\n`);
    process.exit(1);
  }
}

/**
 * Words that mark a value copied from an example rather than generated: deploy/.env.example's
 * "replace-me-…", the "changeme" of countless READMEs, "<your-secret>" and the like.
 */
const PLACEHOLDER = /replace[-_ ]?me|change[-_ ]?me|placeholder|example|your[-_ ]?(secret|token|password|key)|<[^>]*>/i;

/** A value of fewer distinct characters than this ("xxxx…", "abababab…") was typed, not generated. */
const MIN_DISTINCT_CHARACTERS = 6;

/**
 * Why a secret's value is a known example rather than a generated secret, or undefined when it is not
 * one. The reason never quotes the value.
 */
export function placeholderProblem(value: string): string | undefined {
  if (PLACEHOLDER.test(value)) return "is a placeholder from an example; generate a value (e.g. openssl rand -base64 48)";
  if (new Set(value).size < MIN_DISTINCT_CHARACTERS) {
    return `has fewer than ${MIN_DISTINCT_CHARACTERS} distinct characters, so it was not generated; generate a value (e.g. openssl rand -base64 48)`;
  }
  return undefined;
}

/** A secret: required, no default anywhere, long enough to resist guessing, not an example's value. */
function secret(minLength = 32) {
  return z
    .string({ message: `must be set (at least ${minLength} characters; no default)` })
    .min(minLength, { message: `must be at least ${minLength} characters` })
    .superRefine((value, context) => {
      const problem = placeholderProblem(value);
      if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
    });
}

/** The password inside a postgres:// URL, if any (undefined when the URL does not parse). */
function databasePassword(url: string): string | undefined {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return undefined;
  }
}

/**
 * An optional comma-separated list, each item checked by `item` (e.g. extra secrets accepted during a
 * rotation). Unset or empty is the empty list; an empty item ("a,,b", a trailing comma) or an item
 * with surrounding whitespace is refused rather than guessed at, since a secret that silently differs
 * from the one meant would only show up as refused calls. Problems name the item's position, never
 * its value.
 */
function list(item: z.ZodType<string>) {
  return z
    .string()
    .optional()
    .transform((text, context): string[] => {
      if (text === undefined || text === "") return [];
      const items = text.split(",");
      items.forEach((value, index) => {
        const where = `item ${index + 1} of ${items.length}`;
        if (value === "") {
          context.addIssue({ code: "custom", message: `${where} is empty (no empty items, no trailing comma)` });
        } else if (value.trim() !== value) {
          context.addIssue({ code: "custom", message: `${where} begins or ends with whitespace` });
        } else {
          const result = item.safeParse(value);
          if (!result.success) {
            for (const issue of result.error.issues) context.addIssue({ code: "custom", message: `${where} ${issue.message}` });
          }
        }
      });
      return items;
    });
}

/** Reusable variable parsers, so every service reads the same variable the same way. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  host: (fallback = "0.0.0.0") => z.string().min(1).default(fallback),
  logLevel: () => z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  positiveInt: (fallback: number) => z.coerce.number().int().positive().default(fallback),
  url: () => z.string().url("must be a URL"),
  databaseUrl: () =>
    z
      .string({ message: "must be a postgres:// connection string" })
      .regex(/^postgres(ql)?:\/\//, "must be a postgres:// connection string")
      .refine((url) => !PLACEHOLDER.test(databasePassword(url) ?? ""), {
        message: "holds a placeholder password from an example; generate one (e.g. openssl rand -hex 24)",
      }),
  /** A secret: required, no default anywhere, long enough to resist guessing. */
  secret,
  /**
   * Extra values of a secret accepted alongside the main one while it is rotated
   * (SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED, …): comma-separated, each as long as `secret` demands.
   */
  secretList: (minLength = 32) => list(secret(minLength)),
  /** An optional comma-separated list whose items `item` checks. */
  list,
  /**
   * SUBDATA_<CALLER>_TOKEN_SHA256: the hex SHA-256 of each token a server accepts from one caller — one,
   * or two while the token is rotated. `required`: the server is useless without that caller.
   */
  tokenHashes: (required: boolean) =>
    list(z.string().regex(/^[0-9a-f]{64}$/, { message: "must be 64 lowercase hex digits (sha256sum of the token)" }))
      .refine((hashes) => hashes.length <= 2, { message: "holds at most two hashes (the current token and, while rotating, the next)" })
      .refine((hashes) => !required || hashes.length > 0, { message: "must be set (the SHA-256 of the caller's token; no default)" })
      .transform((hashes) => hashes.map((hash) => Buffer.from(hash, "hex"))),
  /** One of a few words, e.g. `sources` or `bundles`. */
  oneOf: <const T extends string>(values: readonly [T, ...T[]], fallback: T) =>
    z.enum(values, { message: `must be one of ${values.join(", ")}` }).default(fallback),
  boolean: (fallback: boolean) =>
    z
      .enum(["true", "false", "1", "0"], { message: "must be true or false" })
      .default(fallback ? "true" : "false")
      .transform((value) => value === "true" || value === "1"),
};
