import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A webhook receiver on 127.0.0.1 that records every request by webhook-id and answers as its
 * behaviour says: a status (with headers, after `delayMs` if given: a slow receiver), "hang" (never
 * answer: the sender's deadline fires) or "destroy" (reset the connection mid-request).
 */
export type ReceiverAnswer = { status: number; headers?: Record<string, string>; delayMs?: number } | "hang" | "destroy";

export interface Receipt {
  webhookId: string;
  subscriptionId: string;
  version: number;
  answered: number | "hang" | "destroy";
  /** When the request arrived (Date.now()). */
  at: number;
  /** The answer was sent (a slow receiver's 2xx counts only from then). */
  sent: boolean;
}

/** `index` counts every request; `attempt` counts this webhook-id's requests (1 on the first). */
export type Behaviour = (request: { index: number; attempt: number; webhookId: string }) => ReceiverAnswer;

export interface FaultReceiver {
  url: string;
  port: number;
  receipts: Receipt[];
  setBehaviour(next: Behaviour): void;
  /** Distinct webhook-ids answered 2xx. */
  deliveredIds(): Set<string>;
  /** 2xx receipts beyond the first for the same webhook-id. */
  duplicates(): number;
  close(): Promise<void>;
}

export const alwaysOk: Behaviour = () => ({ status: 204 });

export async function startFaultReceiver(initial: Behaviour = alwaysOk): Promise<FaultReceiver> {
  let behaviour = initial;
  const receipts: Receipt[] = [];
  const attempts = new Map<string, number>();
  const hanging = new Set<ServerResponse>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const webhookId = String(req.headers["webhook-id"] ?? "");
      let subscriptionId = "";
      let version = 0;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { data?: { object?: { id?: string; version?: number | string } } };
        subscriptionId = String(body.data?.object?.id ?? "");
        version = Number(body.data?.object?.version ?? 0);
      } catch {
        // Recorded with what the headers say.
      }
      const attempt = (attempts.get(webhookId) ?? 0) + 1;
      attempts.set(webhookId, attempt);
      const answer = behaviour({ index: receipts.length, attempt, webhookId });
      receipts.push({ webhookId, subscriptionId, version, answered: typeof answer === "string" ? answer : answer.status, at: Date.now(), sent: false });
      const receipt = receipts[receipts.length - 1]!;
      if (answer === "hang") {
        hanging.add(res);
        res.on("close", () => hanging.delete(res));
        return;
      }
      if (answer === "destroy") {
        req.socket.resetAndDestroy();
        return;
      }
      const respond = () => {
        res.writeHead(answer.status, answer.headers ?? {});
        res.end();
        receipt.sent = true;
      };
      if (!answer.delayMs) return respond();
      hanging.add(res);
      res.on("close", () => hanging.delete(res));
      setTimeout(() => {
        hanging.delete(res);
        if (!res.destroyed) respond();
      }, answer.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const ok = () => receipts.filter((receipt) => receipt.sent && typeof receipt.answered === "number" && receipt.answered >= 200 && receipt.answered < 300);
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    receipts,
    setBehaviour(next) {
      behaviour = next;
    },
    deliveredIds: () => new Set(ok().map((receipt) => receipt.webhookId)),
    duplicates: () => ok().length - new Set(ok().map((receipt) => receipt.webhookId)).size,
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
