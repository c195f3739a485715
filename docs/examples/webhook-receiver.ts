// A minimal subdata webhook receiver: verifies the Standard Webhooks signature, ignores repeats of
// an event it has already handled, and prints each event's type and subscription version.
//   WEBHOOK_SECRET=whsec_… PORT=3000 npx tsx docs/examples/webhook-receiver.ts
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook, WebhookVerificationError } from "standardwebhooks";

const webhook = new Webhook(process.env.WEBHOOK_SECRET ?? "");
// Deliveries are at-least-once: remember handled webhook-ids (use your database in production).
const handled = new Set<string>();

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8"); // verify the exact bytes, before any parsing
    let event: { id: string; type: string; data: { object: { id: string; version: number } } };
    try {
      event = webhook.verify(body, req.headers as Record<string, string>) as typeof event;
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      console.log(`rejected: ${error.message}`);
      res.writeHead(400).end();
      return;
    }
    if (handled.has(event.id)) {
      console.log(`duplicate ${event.id} ignored`);
    } else {
      handled.add(event.id);
      console.log(`${event.type} ${event.data.object.id} version ${event.data.object.version}`);
    }
    res.writeHead(204).end(); // answer 2xx quickly; do slow work after responding
  });
});

server.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? "127.0.0.1", () => {
  const { address, port } = server.address() as AddressInfo;
  console.log(`listening on http://${address}:${port}`);
});
