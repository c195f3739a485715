import { randomBytes } from "node:crypto";
import { toBinary } from "@bufbuild/protobuf";
import { jetstream } from "@nats-io/jetstream";
import { type ChangeEventRow, changeEventFromRow, connectNats, subscriptionEventFromChangeEvent } from "@subdata/events";
import { SubscriptionEventSchema } from "@subdata/proto/subdata/events/v1/subscription_event_pb";
import { loadConfig } from "@subdata/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApiLoad } from "./api-load.ts";
import { claimBatch } from "../../services/webhook/src/delivery/claim-repository.ts";
import { deliveryPipelineConfigShape, inFlightCaps } from "../../services/webhook/src/pipeline-config.ts";
import { startFaultProxy, type FaultMode, type FaultProxy } from "./fault-proxy.ts";
import { figures, outOfOrder, renderTable, settle, type ScenarioFigures } from "./ledger.ts";
import { alwaysOk, startFaultReceiver, type Behaviour, type FaultReceiver } from "./receiver.ts";
import { writeReliabilityTable } from "./reliability-doc.ts";
import { startFaultStack, type FaultStack } from "./stack.ts";
import { createTenant, measureChangeLatencies, produceChanges, type EndpointReceiver, type Tenant } from "./tenant.ts";

/**
 * The fault suite: the stack as real processes on loopback, faults injected into Postgres, NATS, the
 * services and the receivers, and after each scenario an account of every event and every read.
 * Zero lost events, zero unaudited reads served, zero data on error responses.
 */

const rows: ScenarioFigures[] = [];
let stack: FaultStack;
/** docs/reliability.md gets the table only from a full, green run (not from a `-t` subset). */
const TEST_COUNT = 11;
let passed = 0;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface ReceiverSetup {
  behaviour?: Behaviour;
  /** Put a fault proxy between the webhook service and this receiver. */
  proxied?: boolean;
  /** The proxy's mode from the start (before the tenant's first events exist). */
  proxyMode?: FaultMode;
}

interface ScenarioContext {
  tenant: Tenant;
  receivers: EndpointReceiver[];
  proxies: Array<FaultProxy | undefined>;
}

interface ScenarioOptions {
  subscriptions: number;
  receivers: ReceiverSetup[];
  act(context: ScenarioContext): Promise<void>;
  /** Called after settling, before the figures (assert scenario-specific outcomes). */
  check?(context: ScenarioContext, row: ScenarioFigures): Promise<void> | void;
  settleMs?: number;
}

async function scenario(name: string, options: ScenarioOptions): Promise<ScenarioFigures> {
  const proxies: Array<FaultProxy | undefined> = [];
  const receivers: Array<Awaited<ReturnType<typeof startFaultReceiver>>> = [];
  const urls: string[] = [];
  for (const setup of options.receivers) {
    const receiver = await startFaultReceiver(setup.behaviour ?? alwaysOk);
    receivers.push(receiver);
    if (setup.proxied) {
      const proxy = await startFaultProxy({ host: "127.0.0.1", port: receiver.port });
      if (setup.proxyMode) await proxy.set(setup.proxyMode);
      proxies.push(proxy);
      urls.push(`http://${proxy.address}/hook`);
    } else {
      proxies.push(undefined);
      urls.push(receiver.url);
    }
  }
  const tenant = await createTenant(stack, { subscriptions: options.subscriptions, endpointUrls: urls });
  const endpointReceivers = tenant.endpointIds.map((endpointId, index) => ({ endpointId, receiver: receivers[index]! }));
  const context = { tenant, receivers: endpointReceivers, proxies };
  const load = startApiLoad(stack, tenant);
  try {
    await options.act(context);
    const missing = await settle(stack, tenant, endpointReceivers, options.settleMs);
    await load.stop();
    const row = await figures(stack, name, tenant, endpointReceivers, load.responses);
    rows.push(row);
    expect(missing, `${name}: owed deliveries neither delivered nor durably failed`).toEqual([]);
    expect(outOfOrder(endpointReceivers), `${name}: per-subscription order`).toEqual([]);
    expect(row.lost).toBe(0);
    expect(row.unaudited).toBe(0);
    expect(row.leaked).toBe(0);
    await options.check?.(context, row);
    return row;
  } finally {
    await load.stop();
    await Promise.all(proxies.map((proxy) => proxy?.close()));
    await Promise.all(receivers.map((receiver) => receiver.close()));
  }
}

/** A scenario test that counts itself as passed (see TEST_COUNT). */
function faultTest(name: string, body: () => Promise<void>, timeoutMs?: number): void {
  it(
    name,
    async () => {
      await body();
      passed++;
    },
    timeoutMs,
  );
}

/** The ingest lease of the stack's webhook replicas (services/webhook/src/ingest/event-consumer.ts names it). */
const INGEST_LEASE = "subdata-webhook-ingest/SUBDATA_EVENTS/webhook-deliveries";
/**
 * The bound docs/reliability.md states for a takeover of ingest after its leader went silent or froze:
 * the lease's TTL (15 s), a standby's retry (1 s), and slack for a loaded host.
 */
const INGEST_TAKEOVER_BOUND_MS = 20_000;

type WebhookReplica = "webhook" | "webhook2";

interface IngestLeader {
  replica: WebhookReplica;
  epoch: bigint;
}

/** Which replica holds the ingest lease now (its holder column carries the process id). */
async function ingestLeader(): Promise<IngestLeader | undefined> {
  const { rows } = await stack.admin.query<{ holder: string; epoch: string }>(
    "SELECT holder, epoch::text AS epoch FROM webhook_ingest_leases WHERE name = $1 AND expires_at > now()",
    [INGEST_LEASE],
  );
  const row = rows[0];
  if (!row) return undefined;
  const replica = (["webhook", "webhook2"] as const).find((name) => row.holder.split("/")[1] === String(stack.services[name].pid));
  return replica ? { replica, epoch: BigInt(row.epoch) } : undefined;
}

async function waitForIngestLeader(): Promise<IngestLeader> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const leader = await ingestLeader();
    if (leader || Date.now() > deadline) {
      expect(leader, "a webhook replica holds the ingest lease").toBeDefined();
      return leader!;
    }
    await pause(200);
  }
}

/** Waits for a new epoch of the lease; with how long after `sinceMs` it was taken. */
async function nextIngestLeader(previous: IngestLeader, sinceMs: number): Promise<IngestLeader & { afterMs: number }> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const leader = await ingestLeader();
    if (leader && leader.epoch > previous.epoch) return { ...leader, afterMs: Date.now() - sinceMs };
    if (Date.now() > deadline) throw new Error(`no replica took the ingest lease over from ${previous.replica} (epoch ${previous.epoch})`);
    await pause(100);
  }
}

/** Runs `body` with the second webhook replica up; stops it (SIGTERM: it lets the lease go if it holds it) afterwards. */
async function withSecondWebhookReplica(body: () => Promise<void>): Promise<void> {
  await stack.services.webhook2.start();
  try {
    await body();
  } finally {
    await stack.services.webhook2.kill("SIGTERM");
  }
}

/** Makes sure a process the previous scenario disturbed is back before the next one starts. */
async function waitForGateway(): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await fetch(`${stack.gatewayUrl}/api/v1/openapi.json`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok || Date.now() > deadline) return;
    await pause(200);
  }
}

describe("fault suite", () => {
  beforeAll(async () => {
    stack = await startFaultStack();
  }, 180_000);

  afterAll(async () => {
    if (rows.length) {
      const table = renderTable(rows);
      console.log(`\nfault suite figures\n${table}\n`);
      if (passed === TEST_COUNT) writeReliabilityTable(table);
    }
    await stack?.close();
  }, 120_000);

  faultTest("NATS stopped during a burst of subscription changes, then restarted", async () => {
    await scenario("NATS stopped mid-burst (~5 s), restarted", {
      subscriptions: 10,
      receivers: [{}],
      async act({ tenant }) {
        await produceChanges(stack, tenant, 60);
        await stack.nats.stop();
        await produceChanges(stack, tenant, 120);
        await pause(3_000);
        await stack.nats.start();
      },
    });
  });

  faultTest("Postgres restarted (pg_ctl restart -m immediate) under API load", async () => {
    await scenario("Postgres restart -m immediate under load", {
      subscriptions: 10,
      receivers: [{}],
      async act({ tenant }) {
        const producing = produceChanges(stack, tenant, 180, {
          onProgress: async (done) => {
            if (done === 60) await stack.postgres.restartImmediate();
          },
        });
        await producing;
        await waitForGateway();
      },
    });
  });

  faultTest("relay and webhook service killed with SIGKILL mid-burst and restarted", async () => {
    await scenario("relay + webhook SIGKILL mid-burst", {
      subscriptions: 10,
      receivers: [{}],
      settleMs: 120_000,
      async act({ tenant, receivers }) {
        await produceChanges(stack, tenant, 80);
        // Mid-delivery: some deliveries are claimed and in flight when the process dies.
        const receiver = receivers[0]!.receiver;
        const deadline = Date.now() + 20_000;
        while (receiver.receipts.length < 20 && Date.now() < deadline) await pause(20);
        await Promise.all([stack.services.relay.kill("SIGKILL"), stack.services.webhook.kill("SIGKILL")]);
        await produceChanges(stack, tenant, 120);
        await Promise.all([stack.services.relay.start(), stack.services.webhook.start()]);
      },
    });
  });

  faultTest(
    "webhook service paused (SIGSTOP) beyond the ack wait, then resumed",
    async () => {
      await scenario("webhook SIGSTOP 35 s (> 30 s ack wait)", {
        subscriptions: 10,
        receivers: [{}],
        settleMs: 120_000,
        async act({ tenant }) {
          const producing = produceChanges(stack, tenant, 150);
          await pause(300);
          stack.services.webhook.pause();
          await producing;
          await pause(35_000);
          stack.services.webhook.resume();
        },
      });
    },
    180_000,
  );

  faultTest(
    "receivers that fail, time out, reset, blackhole, redirect, answer 410 or 429 with Retry-After",
    async () => {
      const firstTwoFail =
        (answer: Behaviour): Behaviour =>
        (request) =>
          request.attempt <= 2 ? answer(request) : { status: 200 };
      const burst =
        (count: number) =>
        async ({ tenant }: ScenarioContext) =>
          produceChanges(stack, tenant, count);
      const results = await Promise.allSettled([
        scenario("receiver 500 (first 2 attempts)", { subscriptions: 5, receivers: [{ behaviour: firstTwoFail(() => ({ status: 500 })) }], act: burst(20) }),
        scenario("receiver times out (first 4 requests hang > 15 s)", {
          subscriptions: 5,
          receivers: [{ behaviour: (request) => (request.index < 4 ? "hang" : { status: 200 }) }],
          act: burst(20),
        }),
        scenario("receiver resets the connection (first 2 attempts)", {
          subscriptions: 5,
          receivers: [{ behaviour: firstTwoFail(() => "destroy") }],
          act: burst(20),
        }),
        scenario("receiver blackholed 5 s (proxy)", {
          subscriptions: 5,
          receivers: [{ proxied: true }],
          async act({ tenant, proxies }) {
            await proxies[0]!.set({ kind: "blackhole" });
            await produceChanges(stack, tenant, 20);
            await pause(5_000);
            await proxies[0]!.set({ kind: "pass" });
          },
        }),
        scenario("receiver connection reset/refused 5 s (proxy)", {
          subscriptions: 5,
          receivers: [{ proxied: true }],
          async act({ tenant, proxies }) {
            await proxies[0]!.set({ kind: "refuse" });
            await produceChanges(stack, tenant, 20);
            await pause(2_500);
            await proxies[0]!.set({ kind: "reset" });
            await pause(2_500);
            await proxies[0]!.set({ kind: "pass" });
          },
        }),
        scenario("receiver redirects (302, not followed; first 2 attempts)", {
          subscriptions: 5,
          receivers: [{ behaviour: firstTwoFail(() => ({ status: 302, headers: { location: "http://127.0.0.1:1/elsewhere" } })) }],
          act: burst(20),
          check: ({ receivers }) => {
            // Not followed: the target of the redirect (nothing listens there) never mattered, and the same URL was retried.
            expect(receivers[0]!.receiver.receipts.filter((receipt) => receipt.answered === 302).length).toBeGreaterThan(0);
          },
        }),
        scenario("receiver 429 with Retry-After: 1 (first 2 attempts)", {
          subscriptions: 5,
          receivers: [{ behaviour: firstTwoFail(() => ({ status: 429, headers: { "retry-after": "1" } })) }],
          act: burst(20),
        }),
        scenario("receiver 410 Gone (endpoint disabled, rest held)", {
          subscriptions: 3,
          receivers: [{ behaviour: () => ({ status: 410 }) }],
          act: burst(10),
          async check({ tenant }, row) {
            const endpoint = await stack.admin.query<{ status: string; disabled_reason: string | null }>(
              "SELECT status, disabled_reason FROM webhook_endpoints WHERE id = $1",
              [tenant.endpointIds[0]],
            );
            expect(endpoint.rows[0]).toMatchObject({ status: "DISABLED" });
            expect(row.delivered).toBe(0);
            expect(row.recordedFailed).toBe(row.produced);
          },
        }),
      ]);
      const failures = results.filter((result): result is PromiseRejectedResult => result.status === "rejected");
      if (failures.length)
        throw new AggregateError(
          failures.map((failure) => failure.reason as Error),
          failures.map((f) => String(f.reason)).join("\n"),
        );
    },
    240_000,
  );

  faultTest("one endpoint down for a long burst while another endpoint's deliveries stay on time", async () => {
    await scenario("endpoint A down (refused) for the burst; B on time", {
      subscriptions: 10,
      receivers: [{ proxied: true, proxyMode: { kind: "refuse" } }, {}],
      async act({ tenant, receivers, proxies }) {
        await produceChanges(stack, tenant, 60);
        // B gets everything while A is still refusing: A's retries do not hold B's deliveries back.
        const owed = async () =>
          (await stack.admin.query("SELECT count(*)::int AS n FROM event_outbox WHERE merchant_id = $1", [tenant.merchantId])).rows[0].n as number;
        const total = await owed();
        const deadline = Date.now() + 60_000;
        while (receivers[1]!.receiver.deliveredIds().size < total && Date.now() < deadline) await pause(100);
        expect(receivers[1]!.receiver.deliveredIds().size).toBe(total);
        expect(receivers[0]!.receiver.receipts.length).toBe(0);
        expect(proxies[0]!.mode.kind).toBe("refuse");
        await proxies[0]!.set({ kind: "pass" });
      },
    });
  });

  faultTest(
    "one merchant's ten endpoints answer 2xx after 10 s: another merchant's change → delivery p99 stays within 2× its unloaded figure",
    async () => {
      // The other merchant: one healthy endpoint, timed alone before and after the slow merchant's
      // burst (under the same read load as the scenario's) and beside it, the same number of changes
      // each way, so the host's own hiccups weigh alike on both figures. 800 each way, one every 20 ms:
      // a p99 of 400 is the fourth-slowest change, which a quiet or a busy few seconds of a shared host
      // moved by half either way (docs/reliability.md).
      const TIMED = 800;
      const SPACING_MS = 20;
      // The merchant cap of the suite's replica: the service's default, as the stack sets no cap. Above
      // its batch, every claim leaves the slow merchant out as it does at the cap: it is claimed for again
      // only once half of its cap is free, so between waves it holds anything from just over half of its
      // cap to all of it.
      const PIPELINE_DEFAULTS = loadConfig(deliveryPipelineConfigShape, {});
      const MERCHANT_CAP = inFlightCaps(PIPELINE_DEFAULTS).perMerchant;
      const HELD = MERCHANT_CAP - claimBatch(MERCHANT_CAP) + 1;
      // Enough that the slow merchant's heads (ten per subscription) outnumber a replica's slots: without
      // the merchant cap it would hold every one of them.
      const SLOW_SUBSCRIPTIONS = Math.ceil((1.2 * PIPELINE_DEFAULTS.SUBDATA_WEBHOOK_CONCURRENCY) / 10);
      const otherReceiver: FaultReceiver = await startFaultReceiver();
      const slowInFlight = async (merchantId: string) =>
        (
          await stack.admin.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM webhook_deliveries WHERE merchant_id = $1 AND status = 'PENDING' AND claimed_until > now()",
            [merchantId],
          )
        ).rows[0]!.n;
      try {
        const other = await createTenant(stack, { subscriptions: 10, endpointUrls: [otherReceiver.url] });
        const otherReceivers = [{ endpointId: other.endpointIds[0]!, receiver: otherReceiver }];
        const alone = async () => {
          const readers = startApiLoad(stack, other);
          try {
            return await measureChangeLatencies(stack, other, otherReceiver, TIMED / 2, SPACING_MS);
          } finally {
            await readers.stop();
          }
        };
        const unloaded = await alone();
        let loaded: number[] = [];
        const inFlight = { before: 0, during: [] as number[] };
        await scenario("merchant with 10 endpoints answering 2xx after 10 s; another merchant's changes meanwhile", {
          subscriptions: SLOW_SUBSCRIPTIONS,
          // Each subscription's creation, then a change, at each of 10 endpoints: up to 10 heads per
          // subscription at once, more in all than the replica's slots.
          receivers: Array.from({ length: 10 }, () => ({ behaviour: () => ({ status: 204, delayMs: 10_000 }) })),
          settleMs: 180_000,
          async act({ tenant }) {
            await produceChanges(stack, tenant, SLOW_SUBSCRIPTIONS);
            // The slow merchant holds more than its batch before the other merchant's changes start.
            const deadline = Date.now() + 30_000;
            for (;;) {
              inFlight.before = await slowInFlight(tenant.merchantId);
              if (inFlight.before >= HELD || Date.now() > deadline) break;
              await pause(100);
            }
            // Sampled throughout, not once at the end: at the moment a wave of its POSTs is being recorded
            // it may hold less, down to none, for a moment.
            let timing = true;
            const sampling = (async () => {
              while (timing) {
                inFlight.during.push(await slowInFlight(tenant.merchantId));
                await pause(100);
              }
            })();
            try {
              loaded = await measureChangeLatencies(stack, other, otherReceiver, TIMED, SPACING_MS);
            } finally {
              timing = false;
              await sampling;
            }
          },
        });
        unloaded.push(...(await alone()));
        expect(await settle(stack, other, otherReceivers), "the other merchant's owed deliveries").toEqual([]);
        const p = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.ceil(q * values.length) - 1]!;
        const line = (values: number[]) => `p50 ${p(values, 0.5)} ms, p99 ${p(values, 0.99)} ms, max ${p(values, 1)} ms`;
        console.log(
          `\nfair delivery: the slow merchant held ${inFlight.before} deliveries in flight when the timing began and during it a median of ${p(inFlight.during, 0.5)} (min ${Math.min(...inFlight.during)}, over ${inFlight.during.length} samples); the other merchant's change → delivery over ${unloaded.length} changes each: alone ${line(unloaded)}; beside the slow merchant ${line(loaded)}\n`,
        );
        // The slow merchant held its slots through the loaded timing (half of the samples or more above its batch).
        expect(inFlight.before).toBeGreaterThanOrEqual(HELD);
        expect(p(inFlight.during, 0.5)).toBeGreaterThanOrEqual(HELD);
        expect(Math.max(...inFlight.during)).toBeLessThanOrEqual(MERCHANT_CAP);
        expect(loaded).toHaveLength(unloaded.length);
        expect(p(loaded, 0.99)).toBeLessThanOrEqual(2 * p(unloaded, 0.99));
      } finally {
        await otherReceiver.close();
      }
    },
    420_000,
  );

  faultTest("forged events published with the relay's leaked NATS credential, under load: none delivered", async () => {
    const forgedIds = new Set<string>();
    const FORGED_EMAIL = "forged@example.com";
    const FORGED_VERSION = 1_000_000n;
    await scenario("forged and altered events published under load (relay credential leaked)", {
      subscriptions: 5,
      receivers: [{}],
      async act({ tenant }) {
        // The worst case permissions leave: the forger holds the only user allowed to publish events.
        const forger = await connectNats(stack.natsUrl, "relay", stack.nats.credentials.relay);
        const js = jetstream(forger);
        const subject = `subdata.events.subscription.${tenant.merchantId}`;
        const forge = async (round: number) => {
          // As the relay reads it (the suite's admin pool has pg's default parsers: text and bigint by hand).
          const { rows } = await stack.admin.query<ChangeEventRow & { version: string }>(
            `SELECT id, merchant_id, resource_type, resource_id, event_type, version::text AS version,
                    to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' AS occurred_at, payload
               FROM change_events WHERE merchant_id = $1 ORDER BY seq DESC LIMIT 1`,
            [tenant.merchantId],
          );
          const genuine = subscriptionEventFromChangeEvent(changeEventFromRow({ ...rows[0]!, version: BigInt(rows[0]!.version) }));
          // An altered copy of a real event (same id: racing the relay's own publish), and an event no
          // change made, claiming the tenant's real subscription at a version far ahead.
          const altered = { ...genuine, subscription: { ...genuine.subscription!, customer: { ...genuine.subscription!.customer!, email: FORGED_EMAIL } } };
          const invented = { ...genuine, id: `evt_${randomBytes(16).toString("hex")}`, version: FORGED_VERSION + BigInt(round) };
          forgedIds.add(invented.id);
          for (const event of [altered, invented]) {
            await js.publish(subject, toBinary(SubscriptionEventSchema, event), { msgID: `forged-${randomBytes(8).toString("hex")}` });
          }
        };
        try {
          await Promise.all([
            produceChanges(stack, tenant, 60),
            (async () => {
              for (let round = 0; round < 40; round++) {
                await forge(round);
                await pause(25);
              }
            })(),
          ]);
        } finally {
          await forger.close();
        }
      },
      async check({ tenant, receivers }) {
        expect(forgedIds.size).toBe(40);
        const receipts = receivers.flatMap(({ receiver }) => receiver.receipts);
        expect(receipts.filter((receipt) => forgedIds.has(receipt.webhookId))).toEqual([]);
        expect(receipts.filter((receipt) => receipt.version >= Number(FORGED_VERSION))).toEqual([]);
        const stored = await stack.admin.query<{ forged: number; altered: number }>(
          `SELECT count(*) FILTER (WHERE id = ANY ($2::text[]))::int AS forged, count(*) FILTER (WHERE body LIKE '%' || $3 || '%')::int AS altered
             FROM webhook_events WHERE merchant_id = $1`,
          [tenant.merchantId, [...forgedIds], FORGED_EMAIL],
        );
        expect(stored.rows[0]).toEqual({ forged: 0, altered: 0 });
      },
    });
  });

  faultTest("audit path down: 503s with no data served, then recovery", async () => {
    await scenario("audit database unreachable (auth's Postgres reset)", {
      subscriptions: 2,
      receivers: [{}],
      async act({ tenant }) {
        await produceChanges(stack, tenant, 10);
        await pause(1_000); // some served reads first: the key is cached by the gateway
        await stack.pgProxies.auth.set({ kind: "reset" });
        const outage = Date.now();
        const probe = async () => {
          const response = await fetch(`${stack.gatewayUrl}/api/v1/subscriptions?limit=1`, { headers: { authorization: `Bearer ${tenant.key}` } });
          return { status: response.status, body: await response.text() };
        };
        const during = await probe();
        expect(during.status).toBe(503);
        expect(JSON.parse(during.body)).toMatchObject({ code: "unavailable", status: 503 });
        expect(during.body).not.toContain(tenant.subscriptionIds[0]!);
        while (Date.now() - outage < 3_000) await pause(100);
        await stack.pgProxies.auth.set({ kind: "pass" });
        const deadline = Date.now() + 30_000;
        while ((await probe()).status !== 200 && Date.now() < deadline) await pause(200);
        expect((await probe()).status).toBe(200);
      },
    });
  });

  faultTest(
    "two webhook replicas: the ingest leader's Postgres goes silent (blackhole, no reset), the other takes over ingest",
    async () => {
      await withSecondWebhookReplica(async () => {
        let leader: IngestLeader | undefined;
        let takeover: (IngestLeader & { afterMs: number }) | undefined;
        const lostLines: string[] = [];
        await scenario("ingest leader's Postgres blackholed (2 replicas); the other takes over", {
          subscriptions: 10,
          receivers: [{}],
          settleMs: 120_000,
          async act({ tenant }) {
            leader = await waitForIngestLeader();
            const stopListening = stack.services[leader.replica].onLine((line) => {
              if (line.includes("ingest lease lost")) lostLines.push(line);
            });
            const producing = produceChanges(stack, tenant, 150);
            await pause(300);
            const cutAt = Date.now();
            await stack.pgProxies[leader.replica].set({ kind: "blackhole" });
            takeover = await nextIngestLeader(leader, cutAt);
            await producing;
            // The cut-off leader stops itself: it could not renew within the TTL.
            const deadline = Date.now() + 30_000;
            while (lostLines.length === 0 && Date.now() < deadline) await pause(100);
            stopListening();
            // The path comes back (its stale connections cut first); the old leader stays a standby.
            await stack.pgProxies[leader.replica].set({ kind: "reset" });
            await stack.pgProxies[leader.replica].set({ kind: "pass" });
          },
          async check() {
            console.log(`[faults] blackhole: ingest taken over by ${takeover?.replica} ${takeover?.afterMs} ms after the cut`);
            expect(takeover!.replica).not.toBe(leader!.replica);
            expect(takeover!.afterMs).toBeLessThanOrEqual(INGEST_TAKEOVER_BOUND_MS);
            expect(lostLines.length, "the cut-off leader logs that it stopped ingesting").toBeGreaterThan(0);
            // Nobody took it back: the new leader kept renewing, the old one could not write as leader.
            expect((await ingestLeader())?.epoch).toBe(takeover!.epoch);
          },
        });
      });
    },
    300_000,
  );

  faultTest(
    "two webhook replicas: the ingest leader is frozen (SIGSTOP), the other takes over ingest, the woken leader is fenced off",
    async () => {
      await withSecondWebhookReplica(async () => {
        let leader: IngestLeader | undefined;
        let takeover: (IngestLeader & { afterMs: number }) | undefined;
        const lostLines: string[] = [];
        await scenario("ingest leader SIGSTOPped (2 replicas); the other takes over", {
          subscriptions: 10,
          receivers: [{}],
          settleMs: 120_000,
          async act({ tenant }) {
            leader = await waitForIngestLeader();
            const frozen = stack.services[leader.replica];
            const stopListening = frozen.onLine((line) => {
              if (line.includes("ingest lease lost")) lostLines.push(line);
            });
            const producing = produceChanges(stack, tenant, 150);
            await pause(300);
            const frozenAt = Date.now();
            // Its kernel still answers keepalives: only the lease can tell the others it is gone.
            frozen.pause();
            takeover = await nextIngestLeader(leader, frozenAt);
            await producing;
            await pause(2_000);
            frozen.resume();
            // Woken, it finds its lease past its deadline and stops before writing anything as leader.
            const deadline = Date.now() + 30_000;
            while (lostLines.length === 0 && Date.now() < deadline) await pause(100);
            stopListening();
          },
          async check() {
            console.log(`[faults] SIGSTOP: ingest taken over by ${takeover?.replica} ${takeover?.afterMs} ms after the freeze`);
            expect(takeover!.replica).not.toBe(leader!.replica);
            expect(takeover!.afterMs).toBeLessThanOrEqual(INGEST_TAKEOVER_BOUND_MS);
            expect(lostLines.length, "the woken leader logs that it lost the lease").toBeGreaterThan(0);
            expect((await ingestLeader())?.epoch).toBe(takeover!.epoch);
          },
        });
      });
    },
    300_000,
  );
});
