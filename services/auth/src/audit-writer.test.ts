import { Code, ConnectError } from "@connectrpc/connect";
import { createLogger } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import type { AuditRecord } from "./audit-repository.ts";
import { createAuditWriter } from "./audit-writer.ts";

describe("the audit writer's bounds", () => {
  it("refuses a record at once with UNAVAILABLE when maxQueued rows already wait behind a stuck INSERT", async () => {
    const refusals: string[] = [];
    let inserts = 0;
    const writer = createAuditWriter({
      // The database holds the first INSERT forever.
      repository: {
        insertMany: () => {
          inserts++;
          return new Promise<void>(() => {});
        },
      },
      logger: createLogger({ name: "test", level: "silent" }),
      maxQueued: 2,
      onRefused: (reason) => refusals.push(reason),
    });
    const record = (id: string) => ({ id }) as unknown as AuditRecord;
    void writer.record(record("aud_1")).catch(() => {});
    await new Promise((resolve) => setImmediate(resolve));
    void writer.record(record("aud_2")).catch(() => {});
    void writer.record(record("aud_3")).catch(() => {});
    const error = await writer.record(record("aud_4")).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(ConnectError.from(error).code).toBe(Code.Unavailable);
    expect(refusals).toEqual(["queue_full"]);
    expect(inserts).toBe(1);
  });
});
