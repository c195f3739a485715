import { createPortPicker } from "../../deploy/local/src/port-picker.ts";

// Each vitest worker counts through the block of its VITEST_POOL_ID (1 to maxWorkers, unique among the
// workers running at once; deploy/local/src/port-picker.ts says why below the ephemeral range).
const picker = createPortPicker(Number(process.env.VITEST_POOL_ID ?? "1") || 1);

/** A port nothing listens on now (on 127.0.0.1), for a server a test starts later, often in a child process. */
export function freePort(): Promise<number> {
  return picker.next();
}
