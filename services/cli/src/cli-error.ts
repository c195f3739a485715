/**
 * An error the user can act on: printed as its message alone (no stack), exit status 1. With --json
 * it becomes {"error": {"code", "message"}}.
 */
export class CliError extends Error {
  /** The command already printed its result (which says what failed): with --json, no second document. */
  readonly resultPrinted: boolean;

  constructor(
    message: string,
    /** A stable, machine-readable reason: invalid_argument, not_found, failed_precondition, config, database, usage, maintenance. */
    readonly code: string = "invalid_argument",
    options: { resultPrinted?: boolean } = {},
  ) {
    super(message);
    this.name = "CliError";
    this.resultPrinted = options.resultPrinted ?? false;
  }
}

export function configError(message: string): CliError {
  return new CliError(message, "config");
}
