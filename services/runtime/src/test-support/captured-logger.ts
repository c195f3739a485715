import { Writable } from "node:stream";
import type { Logger } from "pino";
import { createLogger, type LoggerOptions } from "../logger.ts";

/** For tests: a real logger (redaction included) whose lines are kept in `lines` instead of written out. */
export function createCapturedLogger(options: Omit<LoggerOptions, "destination">): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: createLogger({ ...options, destination }), lines };
}
