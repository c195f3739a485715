import { invalidArgument } from "@subdata/runtime";

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

/** page_size: 1–200, 0 means the default. */
export function pageSizeOf(requested: number): number {
  if (requested === 0) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(requested) || requested < 1 || requested > MAX_PAGE_SIZE) {
    throw invalidArgument("page_size", `must be between 1 and ${MAX_PAGE_SIZE}`);
  }
  return requested;
}
