import { Code, ConnectError } from "@connectrpc/connect";

/** An outcome the page shows as its own screen, with an HTTP status (never a stack trace). */
export class PageError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
    this.name = "PageError";
  }
}

/** A form value the merchant can fix: the form is shown again with this message beside it. */
export class FormError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FormError";
  }
}

/**
 * What an upstream failure means to the person looking at the page. INVALID_ARGUMENT and
 * FAILED_PRECONDITION are theirs to fix (the form again, with the service's message); NOT_FOUND is a page
 * of its own; anything else is subdata's problem, said plainly.
 */
export function pageErrorOf(error: unknown): FormError | PageError | undefined {
  if (!(error instanceof ConnectError)) return undefined;
  switch (error.code) {
    case Code.InvalidArgument:
    case Code.FailedPrecondition:
    case Code.AlreadyExists:
      return new FormError(error.rawMessage);
    case Code.NotFound:
      return new PageError(404, "Not found", "It does not exist, was deleted, or belongs to another merchant.");
    case Code.ResourceExhausted:
      return new PageError(429, "Too many requests", "Wait a moment and try again.");
    default:
      return new PageError(
        503,
        "Something is not answering",
        "A subdata service did not answer in time. Nothing you entered was lost: go back and try again in a moment.",
      );
  }
}
