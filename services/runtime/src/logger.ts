import { pino, type Logger } from "pino";

export type { Logger };

/**
 * Paths pino censors wherever they appear in a log line. Keys, secrets, tokens and credentials must
 * never reach a log, whoever logs them.
 */
const redactedPaths = [
  "authorization",
  "*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "req.headers.authorization",
  "key",
  "*.key",
  "secret",
  "*.secret",
  "password",
  "*.password",
  "token",
  "*.token",
  "serviceToken",
  "*.serviceToken",
  "databaseUrl",
  "*.databaseUrl",
];

export interface LoggerOptions {
  /** The service name, on every line. */
  name: string;
  level?: string;
  /** Where to write; stdout by default (tests pass a stream to inspect what was logged). */
  destination?: pino.DestinationStream;
  /** Fields added to every line, e.g. the current request's trace (TraceScope.logFields). */
  context?: () => Record<string, unknown>;
}

/** A JSON logger with redaction; one per process, passed down explicitly. */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? "info",
      redact: { paths: redactedPaths, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      ...(options.context ? { mixin: options.context } : {}),
    },
    options.destination,
  );
}
