/**
 * An error the user can act on: printed as its message alone (no stack), exit status 1. With --json
 * it becomes {"error": {"code", "message"}}.
 */
export class CliError extends Error {
  constructor(
    message: string,
    /** A stable, machine-readable reason: invalid_argument, not_found, failed_precondition, config, database, usage. */
    readonly code: string = "invalid_argument",
  ) {
    super(message);
    this.name = "CliError";
  }
}

export function configError(message: string): CliError {
  return new CliError(message, "config");
}
