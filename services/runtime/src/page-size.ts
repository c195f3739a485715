import { invalidArgument } from "./errors.ts";

const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

/** page_size as every subdata list defines it (contract: 1–200, default 50): 0 means the default, 1–200 as asked, anything else is refused. */
export function resolvePageSize(pageSize: number): number {
  if (pageSize === 0) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    throw invalidArgument("page_size", `must be between 1 and ${MAX_PAGE_SIZE} (0 means ${DEFAULT_PAGE_SIZE})`);
  }
  return pageSize;
}
