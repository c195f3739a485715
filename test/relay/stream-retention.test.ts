import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "@subdata/events";
import { ensureEventStream } from "@subdata/relay";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

describe("the event stream's max_age", () => {
  const runId = inject("runId");
  const stream = `T_${runId}_stream_age`;
  let nc: NatsConnection;

  beforeAll(async () => {
    nc = await connectNats(inject("natsUrl"), "relay");
  });

  afterAll(async () => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(stream).catch(() => false);
    await nc?.close();
  });

  it("is 7 days by default, follows SUBDATA_EVENTS_STREAM_MAX_AGE_DAYS on the next start, and is reported as the stream has it", async () => {
    const settings = { stream, subjectPrefix: `t.${runId}.stream-age`, replicas: 1 };
    const day = 86_400_000;
    expect(await ensureEventStream(nc, settings)).toEqual({ maxAgeMs: 7 * day });
    expect(await ensureEventStream(nc, { ...settings, maxAgeDays: 30 })).toEqual({ maxAgeMs: 30 * day });
    const jsm = await jetstreamManager(nc);
    expect(Number((await jsm.streams.info(stream)).config.max_age)).toBe(30 * day * 1_000_000);
  });
});
