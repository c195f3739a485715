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
      .regex(/^postgres(ql)?:\/\//, "must be a postgres:// connection string"),
  /** A secret: required, no default anywhere, long enough to resist guessing. */
  secret: (minLength = 32) =>
    z.string({ message: `must be set (at least ${minLength} characters; no default)` }).min(minLength, {
      message: `must be at least ${minLength} characters`,
    }),
  boolean: (fallback: boolean) =>
    z
      .enum(["true", "false", "1", "0"], { message: "must be true or false" })
      .default(fallback ? "true" : "false")
      .transform((value) => value === "true" || value === "1"),
};
