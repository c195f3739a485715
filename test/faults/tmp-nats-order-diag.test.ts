// TEMPORARY diagnostic (ordering bug hunt); to be deleted.
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, it } from "vitest";
import { outOfOrder, settle } from "./ledger.ts";
import { alwaysOk, startFaultReceiver } from "./receiver.ts";
import { startFaultStack, type FaultStack } from "./stack.ts";
import { createTenant, produceChanges } from "./tenant.ts";

let stack: FaultStack;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("diag", () => {
  beforeAll(async () => {
    stack = await startFaultStack();
  }, 180_000);
  afterAll(async () => {
    await stack?.close();
  }, 120_000);

  it("repeats the NATS outage", async () => {
    const runs = Number(process.env.DIAG_RUNS ?? 6);
    for (let run = 0; run < runs; run++) {
      const receiver = await startFaultReceiver(alwaysOk);
      const tenant = await createTenant(stack, { subscriptions: 10, endpointUrls: [receiver.url] });
      const started = Date.now();
      const mode = process.env.DIAG_MODE ?? "jitter";
      if (mode === "cut") {
        let cutting: Promise<void> | undefined;
        await produceChanges(stack, tenant, 60, { onProgress: (done) => { if (done === 20 + (run % 8) * 5) cutting = stack.natsProxy.set({ kind: "reset" }); } });
        await cutting;
      } else if (mode === "mid") {
        let stopping: Promise<void> | undefined;
        await produceChanges(stack, tenant, 60, { onProgress: (done) => { if (done === 20 + (run % 8) * 5) stopping = stack.nats.stop(); } });
        await stopping;
      } else {
        await produceChanges(stack, tenant, 60);
        await pause((run % 10) * 15);
        await stack.nats.stop();
      }
      if (mode === "cut") {} // NATS keeps running; only the connections are cut
      await produceChanges(stack, tenant, 120);
      await pause(3_000);
      if (mode === "cut") await stack.natsProxy.set({ kind: "pass" });
      else await stack.nats.start();
      const missing = await settle(stack, tenant, [{ endpointId: tenant.endpointIds[0]!, receiver: receiver }]);
      const broken = outOfOrder([{ endpointId: tenant.endpointIds[0]!, receiver }]);
      console.log(`RUN ${run}: settled in ${Date.now() - started} ms, missing ${missing.length}, broken ${broken.length}: ${broken.join("; ")}`);
      {
        const nc0 = await connect({ servers: stack.nats.url });
        const ci0 = await (await jetstreamManager(nc0)).consumers.info("SUBDATA_EVENTS", "webhook-deliveries").catch((e) => String(e));
        console.log(`RUN ${run} consumer: ` + JSON.stringify(typeof ci0 === "string" ? ci0 : { delivered: ci0.delivered, ack_floor: ci0.ack_floor, redelivered: ci0.num_redelivered, ack_pending: ci0.num_ack_pending, start: ci0.config.opt_start_seq }));
        await nc0.close();
      }
      if (broken.length > 0) {
        const subs = [...new Set(broken.map((b) => b.split(":")[0]!))];
        const nc = await connect({ servers: stack.nats.url });
        const jsm = await jetstreamManager(nc);
        const { state } = await jsm.streams.info("SUBDATA_EVENTS");
        const seqOf = new Map<string, number>();
        for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
          const m = await jsm.streams.getMessage("SUBDATA_EVENTS", { seq }).catch(() => null);
          const id = m?.header?.get("Nats-Msg-Id");
          if (id) seqOf.set(id, seq);
        }
        const ci = await jsm.consumers.info("SUBDATA_EVENTS", "webhook-deliveries").catch((e) => String(e));
        console.log("CONSUMER", JSON.stringify(ci).slice(0, 1500));
        await nc.close();
        for (const sub of subs.slice(0, 2)) {
          const { rows } = await stack.admin.query(
            `SELECT o.version, o.seq AS outbox_seq, o.published_at, o.attempts, o.last_error, o.id,
                    e.received_at, e.xmin::text AS ev_xmin, d.created_at, d.delivered_at, d.attempt_count
               FROM event_outbox o LEFT JOIN webhook_events e ON e.id = o.id LEFT JOIN webhook_deliveries d ON d.event_id = o.id
              WHERE o.subscription_id = $1 ORDER BY o.seq`,
            [sub],
          );
          console.log(`SUB ${sub}`);
          for (const r of rows) {
            console.log(
              `  v${r.version} oseq=${r.outbox_seq} pub=${r.published_at} att=${r.attempts} err=${r.last_error ?? ""} sseq=${seqOf.get(r.id)} recv=${r.received_at} xmin=${r.ev_xmin} dcreated=${r.created_at} delivered=${r.delivered_at}`,
            );
          }
          const order = receiver.receipts.filter((x) => x.subscriptionId === sub).map((x) => `v${x.version}:${x.answered}`);
          console.log(`  receipts: ${order.join(" ")}`);
        }
      }
      await receiver.close();
    }
  }, 1_200_000);
});
