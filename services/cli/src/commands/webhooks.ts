import { create } from "@bufbuild/protobuf";
import { DurationSchema, type Timestamp, timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { eventTypeName, eventTypeNames, eventTypeOf } from "@subdata/events";
import type { EventType } from "@subdata/proto/subdata/events/v1/event_type_pb";
import { type Delivery, DeliveryStatus } from "@subdata/proto/subdata/webhook/v1/delivery_pb";
import { WebhookDeliveryService } from "@subdata/proto/subdata/webhook/v1/delivery_service_pb";
import { type Endpoint, EndpointStatus } from "@subdata/proto/subdata/webhook/v1/endpoint_pb";
import { WebhookEndpointService } from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import { ConfigError, createServiceTransport, loadConfig, timestampToRfc3339Millis } from "@subdata/runtime";
import { createSecretBox, webhookConfigShape } from "@subdata/webhook";
import type { CliContext, RegisterCommands } from "../cli-context.ts";
import { CliError, configError } from "../cli-error.ts";
import { databaseUrlSetting, withDatabase } from "../database.ts";
import { DURATION_UNIT_MS, durationText, parseDuration, parseRfc3339, parseWholeNumber } from "../option-parsers.ts";
import { DEFAULT_REENCRYPT_BATCH_SIZE, reencryptWebhookSecrets } from "../reencrypt-webhook-secrets.ts";

const DEFAULT_WEBHOOK_URL = "http://127.0.0.1:8093";
const MAX_DELIVERIES = 1_000;
const PAGE_SIZE = 200;

interface WebhookClients {
  endpoints: Client<typeof WebhookEndpointService>;
  deliveries: Client<typeof WebhookDeliveryService>;
}

/** An RPC failure as something the user can act on (no stack, a stable code for --json). */
function cliErrorFrom(error: unknown, baseUrl: string): unknown {
  if (!(error instanceof ConnectError)) return error;
  switch (error.code) {
    case Code.NotFound:
      return new CliError(error.rawMessage, "not_found");
    case Code.InvalidArgument:
    case Code.FailedPrecondition:
      return new CliError(error.rawMessage, "invalid_argument");
    case Code.Unauthenticated:
    case Code.PermissionDenied:
      return new CliError(`the webhook service refused SUBDATA_CLI_TOKEN: ${error.rawMessage}`, "config");
    case Code.Unavailable:
      return new CliError(`the webhook service at ${baseUrl} is unavailable (is it running? SUBDATA_WEBHOOK_URL): ${error.rawMessage}`, "unavailable");
    default:
      return new CliError(`the webhook service failed: ${error.rawMessage}`, "internal");
  }
}

/** Runs `work` with typed clients of the webhook service, then closes the HTTP/2 session so the process exits. */
async function withWebhookService<T>(context: CliContext, work: (clients: WebhookClients) => Promise<T>): Promise<T> {
  const baseUrl = context.setting("SUBDATA_WEBHOOK_URL") ?? DEFAULT_WEBHOOK_URL;
  const { transport, close } = createServiceTransport({ baseUrl, serviceToken: context.requireSetting("SUBDATA_CLI_TOKEN") });
  try {
    return await work({ endpoints: createClient(WebhookEndpointService, transport), deliveries: createClient(WebhookDeliveryService, transport) });
  } catch (error) {
    throw cliErrorFrom(error, baseUrl);
  } finally {
    close();
  }
}

function parseEventTypes(text: string): EventType[] {
  return text
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "")
    .map((name) => {
      const type = eventTypeOf(name);
      if (type === undefined) throw new CliError(`--events takes ${eventTypeNames.join(", ")}; got "${name}"`);
      return type;
    });
}

// The webhook service's own limit (endpoint-service.ts), checked here too so the refusal names --grace.
const MAX_GRACE_MS = 7 * DURATION_UNIT_MS.d;

// The services' (and Postgres's) first instant: Timestamp fields hold years 1–9999 (postgres-fields.ts).
const EARLIEST_TIME_MS = Date.parse("0001-01-01T00:00:00Z");

/** An RFC 3339 time ("2026-11-01T00:00:00Z") or a duration ago ("2h", "7d", "2w"), from year 1 on. */
function parseTime(text: string, option: string, now: number): Timestamp {
  try {
    const time = /^\d+[a-z]$/.test(text)
      ? timestampFromMs(now - parseDuration(text, option, { allowZero: true, maxMs: now - EARLIEST_TIME_MS }))
      : parseRfc3339(text, option);
    if (timestampMs(time) >= EARLIEST_TIME_MS) return time;
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
  }
  // One message for both forms: which one was meant is anyone's guess when neither parses.
  throw new CliError(`${option} must be an RFC 3339 time with an offset (2026-11-01T00:00:00Z) or a duration ago (2h, 7d, 2w), got "${text}"`);
}

function parseDeliveryStatus(text: string): DeliveryStatus {
  // The enum maps numbers to names too (DeliveryStatus["1"] is "PENDING"): only a name may match.
  const status: unknown = DeliveryStatus[text.toUpperCase() as keyof typeof DeliveryStatus];
  if (typeof status !== "number" || status === DeliveryStatus.UNSPECIFIED) {
    throw new CliError(`--status must be one of PENDING, SUCCEEDED, FAILED, CANCELLED, got "${text}"`);
  }
  return status;
}

function timeText(timestamp: Timestamp | undefined): string | null {
  return timestamp ? timestampToRfc3339Millis(timestamp) : null;
}

function endpointJson(endpoint: Endpoint) {
  return {
    id: endpoint.id,
    merchant_id: endpoint.merchantId,
    url: endpoint.url,
    description: endpoint.description,
    event_types: endpoint.eventTypes.map((type) => eventTypeName(type) ?? String(type)),
    status: EndpointStatus[endpoint.status],
    disabled_reason: endpoint.disabledReason === "" ? null : endpoint.disabledReason,
    created_at: timeText(endpoint.createdAt),
    updated_at: timeText(endpoint.updatedAt),
    previous_secret_expires_at: timeText(endpoint.previousSecretExpiresAt),
  };
}

function deliveryJson(delivery: Delivery) {
  return {
    id: delivery.id,
    endpoint_id: delivery.endpointId,
    event_id: delivery.eventId,
    event_type: eventTypeName(delivery.eventType) ?? null,
    subscription_id: delivery.subscriptionId === "" ? null : delivery.subscriptionId,
    resource_id: delivery.resourceId,
    version: Number(delivery.version),
    status: DeliveryStatus[delivery.status],
    attempt_count: delivery.attemptCount,
    next_attempt_at: timeText(delivery.nextAttemptAt),
    last_attempt_at: timeText(delivery.lastAttemptAt),
    delivered_at: timeText(delivery.deliveredAt),
    created_at: timeText(delivery.createdAt),
  };
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function endpointText(endpoint: ReturnType<typeof endpointJson>): string {
  const types = endpoint.event_types.length === 0 ? "all events" : endpoint.event_types.join(", ");
  return `${endpoint.id}  ${endpoint.status}  ${endpoint.url}  (${types})`;
}

const MAX_REENCRYPT_BATCH_SIZE = 10_000;

/** The master keys as the webhook service reads them (same validation, same messages). */
function secretKeySettings(context: CliContext) {
  const { SUBDATA_WEBHOOK_SECRET_KEY, SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS } = webhookConfigShape;
  const names = ["SUBDATA_WEBHOOK_SECRET_KEY", "SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS"] as const;
  try {
    return loadConfig(
      { SUBDATA_WEBHOOK_SECRET_KEY, SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS },
      Object.fromEntries(names.map((name) => [name, context.setting(name)])),
    );
  } catch (error) {
    if (error instanceof ConfigError) throw configError(error.problems.join("; "));
    throw error;
  }
}

const SECRET_WARNING = "This is the only time the signing secret is shown. Store it now (e.g. in your secret manager).";

interface MerchantOption {
  merchant: string;
}

/** `subdata webhooks …`: a merchant's webhook endpoints and deliveries, through the webhook service's RPCs. */
export const registerWebhooksCommands: RegisterCommands = (program, context) => {
  const webhooks = program.command("webhooks").description("manage webhook endpoints and deliveries (SUBDATA_WEBHOOK_URL, default http://127.0.0.1:8093)");

  webhooks
    .command("create")
    .description("register an endpoint; prints its signing secret once")
    .requiredOption("--merchant <id>", "the merchant (mer_…)")
    .requiredOption("--url <url>", "https URL that receives the events")
    .option("--events <types>", `comma-separated subset of ${eventTypeNames.join(", ")} (default: every event type)`)
    .option("--description <text>", "a note for humans")
    .action(async (options: MerchantOption & { url: string; events?: string; description?: string }) => {
      const eventTypes = options.events === undefined ? [] : parseEventTypes(options.events);
      const created = await withWebhookService(context, ({ endpoints }) =>
        endpoints.createEndpoint({ merchantId: options.merchant, url: options.url, description: options.description ?? "", eventTypes }),
      );
      const endpoint = endpointJson(created.endpoint!);
      context.output.info(SECRET_WARNING);
      context.output.result({ endpoint, secret: created.secret }, `${endpointText(endpoint)}\nsigning secret: ${created.secret}`);
    });

  webhooks
    .command("list")
    .description("list a merchant's endpoints, oldest first (never their secrets)")
    .requiredOption("--merchant <id>", "the merchant (mer_…)")
    .action(async (options: MerchantOption) => {
      const all = await withWebhookService(context, async ({ endpoints }) => {
        const found: Endpoint[] = [];
        let pageToken = "";
        do {
          const page = await endpoints.listEndpoints({ merchantId: options.merchant, pageSize: PAGE_SIZE, pageToken });
          found.push(...page.endpoints);
          pageToken = page.nextPageToken;
        } while (pageToken !== "");
        return found.map(endpointJson);
      });
      context.output.result(
        { endpoints: all },
        all.length === 0
          ? "no endpoints"
          : table([["ID", "STATUS", "URL", "EVENTS"], ...all.map((e) => [e.id, e.status, e.url, e.event_types.join(",") || "all"])]),
      );
    });

  webhooks
    .command("rotate-secret")
    .description("make a new signing secret (printed once); the old one keeps signing for the grace period")
    .argument("<endpoint-id>", "we_…")
    .requiredOption("--merchant <id>", "the merchant (mer_…)")
    .option("--grace <duration>", `how long the old secret keeps signing, 0s to ${durationText(MAX_GRACE_MS)}`, "24h")
    .action(async (endpointId: string, options: MerchantOption & { grace: string }) => {
      const graceMs = parseDuration(options.grace, "--grace", { allowZero: true, maxMs: MAX_GRACE_MS });
      const gracePeriod = create(DurationSchema, { seconds: BigInt(graceMs / 1000) });
      const rotated = await withWebhookService(context, ({ endpoints }) => endpoints.rotateSecret({ merchantId: options.merchant, endpointId, gracePeriod }));
      const endpoint = endpointJson(rotated.endpoint!);
      context.output.info(SECRET_WARNING);
      const previous = endpoint.previous_secret_expires_at
        ? `the previous secret keeps signing until ${endpoint.previous_secret_expires_at}`
        : "the previous secret no longer signs";
      context.output.result({ endpoint, secret: rotated.secret }, `${endpointText(endpoint)}\nsigning secret: ${rotated.secret}\n${previous}`);
    });

  webhooks
    .command("delete")
    .description("delete an endpoint; its pending deliveries are dropped")
    .argument("<endpoint-id>", "we_…")
    .requiredOption("--merchant <id>", "the merchant (mer_…)")
    .action(async (endpointId: string, options: MerchantOption) => {
      await withWebhookService(context, ({ endpoints }) => endpoints.deleteEndpoint({ merchantId: options.merchant, endpointId }));
      context.output.result({ id: endpointId, deleted: true }, `${endpointId} deleted`);
    });

  webhooks
    .command("deliveries")
    .description("list an endpoint's deliveries, newest first")
    .argument("<endpoint-id>", "we_…")
    .requiredOption("--merchant <id>", "the merchant (mer_…)")
    .option("--status <status>", "PENDING, SUCCEEDED, FAILED or CANCELLED")
    .option("--limit <n>", `at most this many (1–${MAX_DELIVERIES})`, "20")
    .action(async (endpointId: string, options: MerchantOption & { status?: string; limit: string }) => {
      const limit = parseWholeNumber(options.limit, "--limit", { min: 1, max: MAX_DELIVERIES });
      const status = options.status === undefined ? DeliveryStatus.UNSPECIFIED : parseDeliveryStatus(options.status);
      const found = await withWebhookService(context, async ({ deliveries }) => {
        const rows: Delivery[] = [];
        let pageToken = "";
        do {
          const pageSize = Math.min(PAGE_SIZE, limit - rows.length);
          const page = await deliveries.listDeliveries({ merchantId: options.merchant, endpointId, status, pageSize, pageToken });
          rows.push(...page.deliveries);
          pageToken = page.nextPageToken;
        } while (pageToken !== "" && rows.length < limit);
        return rows.map(deliveryJson);
      });
      context.output.result(
        { deliveries: found },
        found.length === 0
          ? "no deliveries"
          : table([
              ["ID", "EVENT", "TYPE", "STATUS", "ATTEMPTS", "CREATED"],
              ...found.map((d) => [d.id, d.event_id, d.event_type ?? "?", d.status, String(d.attempt_count), d.created_at ?? ""]),
            ]),
      );
    });

  webhooks
    .command("replay")
    .description("deliver again, in order and with their original ids, the events of a time range (at most 31 days, 10,000 events)")
    .argument("<endpoint-id>", "we_…")
    .requiredOption("--merchant <id>", "the merchant (mer_…)")
    .requiredOption("--since <time>", "start, inclusive: RFC 3339 with an offset, or a duration ago (2h, 7d, 2w)")
    .option("--until <time>", "end, exclusive: RFC 3339 with an offset, or a duration ago (default: now)")
    .action(async (endpointId: string, options: MerchantOption & { since: string; until?: string }) => {
      const now = Date.now();
      const startTime = parseTime(options.since, "--since", now);
      // Without --until the range ends at this same `now`, so "--since 31d" is exactly the 31 days the
      // service allows (left to the service, the end would be its own, later, now).
      const endTime = options.until === undefined ? timestampFromMs(now) : parseTime(options.until, "--until", now);
      const replayed = await withWebhookService(context, ({ deliveries }) =>
        deliveries.replayEvents({ merchantId: options.merchant, endpointId, startTime, endTime }),
      );
      context.output.result(
        { endpoint_id: endpointId, scheduled_count: replayed.scheduledCount },
        `${replayed.scheduledCount} event(s) scheduled for ${endpointId}`,
      );
    });

  webhooks
    .command("reencrypt-secrets")
    .description(
      "seal every endpoint's stored signing secrets with SUBDATA_WEBHOOK_SECRET_KEY, opening them with it or " +
        "SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS, so a previous key can be dropped (DATABASE_URL; safe to run again)",
    )
    .option("--batch-size <n>", `endpoints per transaction (1–${MAX_REENCRYPT_BATCH_SIZE})`, String(DEFAULT_REENCRYPT_BATCH_SIZE))
    .action(async (options: { batchSize: string }) => {
      const batchSize = parseWholeNumber(options.batchSize, "--batch-size", { min: 1, max: MAX_REENCRYPT_BATCH_SIZE });
      const keys = secretKeySettings(context);
      const secretBox = createSecretBox(keys.SUBDATA_WEBHOOK_SECRET_KEY, keys.SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS);
      const report = await withDatabase(databaseUrlSetting(context), context.signal, async (client) => {
        const total = Number((await client.query<{ count: string }>("SELECT count(*) FROM webhook_endpoints")).rows[0]!.count);
        const progress = context.output.progress(total, "endpoints");
        try {
          return await reencryptWebhookSecrets({ client, secretBox, batchSize, onProgress: (done) => progress.update(done) });
        } finally {
          progress.stop();
        }
      });
      const summary =
        `${report.endpoints} endpoint(s): ${report.reencrypted} secret(s) re-encrypted with the main key, ` + `${report.alreadyCurrent} already under it`;
      if (report.unreadable > 0) {
        // Nothing is lost (those columns were left as they were), but dropping a previous key now would be.
        const listed = report.unreadableIds.join(", ") + (report.unreadable > report.unreadableIds.length ? ", …" : "");
        throw configError(
          `${summary}; ${report.unreadable} endpoint(s) have a secret that no configured key opens (${listed}): ` +
            "keep every previous key until they are resolved (add the missing key to SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS and run again)",
        );
      }
      context.output.result(
        { endpoints: report.endpoints, reencrypted: report.reencrypted, already_current: report.alreadyCurrent, unreadable: 0 },
        `${summary}; none left under a previous key`,
      );
    });

  webhooks
    .command("test")
    .description('send a synthetic subscription.updated event, marked "test": true')
    .argument("<endpoint-id>", "we_…")
    .requiredOption("--merchant <id>", "the merchant (mer_…)")
    .action(async (endpointId: string, options: MerchantOption) => {
      const sent = await withWebhookService(context, ({ endpoints }) => endpoints.sendTestEvent({ merchantId: options.merchant, endpointId }));
      context.output.result(
        { endpoint_id: endpointId, event_id: sent.eventId, delivery_id: sent.deliveryId },
        `test event ${sent.eventId} scheduled as delivery ${sent.deliveryId}; see: subdata webhooks deliveries ${endpointId} --merchant ${options.merchant}`,
      );
    });
};
