import { create } from "@bufbuild/protobuf";
import type { Duration } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  CreateEndpointResponseSchema,
  DeleteEndpointResponseSchema,
  GetEndpointResponseSchema,
  ListEndpointsResponseSchema,
  RotateSecretResponseSchema,
  SendTestEventResponseSchema,
  UpdateEndpointResponseSchema,
  WebhookEndpointService,
} from "@subdata/proto/subdata/webhook/v1/endpoint_service_pb";
import {
  cursorToPosition,
  invalidArgument,
  newId,
  notFound,
  type PageTokenBinding,
  type PageTokenCodec,
  positionToCursor,
  requireMerchantId,
  requireNoNul,
  resolvePageSize,
  splitPage,
} from "@subdata/runtime";
import type { DeliveryScheduleRepository } from "./delivery-schedule-repository.ts";
import { endpointMessage, endpointStatusToDb } from "./endpoint-message.ts";
import type { EndpointChanges, EndpointRepository, EndpointRow } from "./endpoint-repository.ts";
import { endpointDisabled, eventTypeNamesOf, requireId } from "./request-fields.ts";
import { generateSigningSecret, type SecretBox } from "../secret-box.ts";
import { buildTestEvent } from "./test-event.ts";
import type { UrlPolicy } from "./url-policy.ts";

export interface EndpointServiceDeps {
  endpoints: EndpointRepository;
  schedule: DeliveryScheduleRepository;
  secretBox: SecretBox;
  urlPolicy: UrlPolicy;
  pageTokens: PageTokenCodec;
  /** Called after a delivery was scheduled, so the pipeline looks now rather than at its next poll. */
  onScheduled: () => void;
  now?: () => Date;
}

const LIST_METHOD = `${WebhookEndpointService.typeName}/ListEndpoints`;
const MAX_DESCRIPTION_LENGTH = 500;
const MICROS_PER_SECOND = 1_000_000n;
export const DEFAULT_GRACE_MICROS = 24n * 3600n * MICROS_PER_SECOND;
export const MAX_GRACE_MICROS = 7n * 24n * 3600n * MICROS_PER_SECOND;
const UPDATABLE = new Set(["url", "description", "event_types", "status"]);

function checkDescription(description: string, field: string): string {
  if ([...description].length > MAX_DESCRIPTION_LENGTH) throw invalidArgument(field, `must be at most ${MAX_DESCRIPTION_LENGTH} characters`);
  return requireNoNul(field, description);
}

/** grace_period as microseconds: unset means 24 h; 0 to 7 days, whole microseconds. */
export function gracePeriodMicros(grace: Duration | undefined): bigint {
  if (grace === undefined) return DEFAULT_GRACE_MICROS;
  if (grace.seconds < 0n || grace.nanos < 0) throw invalidArgument("grace_period", "must not be negative");
  const micros = grace.seconds * MICROS_PER_SECOND + BigInt(Math.floor(grace.nanos / 1000));
  if (micros > MAX_GRACE_MICROS) throw invalidArgument("grace_period", "must be at most 7 days");
  return micros;
}

/** subdata.webhook.v1.WebhookEndpointService. Secrets leave only in Create and Rotate responses. */
export function createEndpointService(deps: EndpointServiceDeps): ServiceImpl<typeof WebhookEndpointService> {
  const now = deps.now ?? (() => new Date());

  /** The merchant's endpoint, or NOT_FOUND exactly as for an unknown id. */
  async function findEndpoint(merchantId: string, endpointId: string, field = "endpoint_id"): Promise<EndpointRow> {
    const { id, wellFormed } = requireId(field, endpointId, "we");
    const row = wellFormed ? await deps.endpoints.find(merchantId, id) : undefined;
    if (row === undefined) throw notFound("endpoint");
    return row;
  }

  return {
    async createEndpoint(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const description = checkDescription(request.description, "description");
      const eventTypes = eventTypeNamesOf(request.eventTypes, "event_types");
      const url = await deps.urlPolicy.check(request.url, "url");
      // The id is made here because the secret is sealed with it as associated data.
      const id = newId("we");
      const secret = generateSigningSecret();
      const row = await deps.endpoints.insert({
        id,
        merchantId,
        url,
        description,
        eventTypes,
        secretCiphertext: deps.secretBox.seal(secret, id),
      });
      if (row === undefined) throw notFound("merchant");
      return create(CreateEndpointResponseSchema, { endpoint: endpointMessage(row), secret });
    },

    async listEndpoints(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const pageSize = resolvePageSize(request.pageSize);
      const binding: PageTokenBinding = { method: LIST_METHOD, merchantId, filter: {} };
      const after = request.pageToken === "" ? null : positionToCursor(deps.pageTokens.decode(request.pageToken, binding));
      const rows = await deps.endpoints.list(merchantId, after, pageSize + 1);
      const { page, next } = splitPage(rows, pageSize, (row) => ({ at: row.created_at, id: row.id }));
      return create(ListEndpointsResponseSchema, {
        endpoints: page.map(endpointMessage),
        nextPageToken: next === null ? "" : deps.pageTokens.encode(binding, cursorToPosition(next)),
      });
    },

    async getEndpoint(request) {
      const merchantId = requireMerchantId(request.merchantId);
      return create(GetEndpointResponseSchema, { endpoint: endpointMessage(await findEndpoint(merchantId, request.endpointId)) });
    },

    async updateEndpoint(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const endpoint = request.endpoint;
      if (endpoint === undefined) throw invalidArgument("endpoint", "is required");
      const paths = request.updateMask?.paths ?? [];
      if (paths.length === 0) throw invalidArgument("update_mask", "is required (any of url, description, event_types, status)");
      for (const path of paths) {
        if (!UPDATABLE.has(path)) throw invalidArgument("update_mask", `${path} cannot be updated (only url, description, event_types, status)`);
      }
      const { id, wellFormed } = requireId("endpoint.id", endpoint.id, "we");
      if (!wellFormed) throw notFound("endpoint");

      const changes: EndpointChanges = {};
      const mask = new Set(paths);
      if (mask.has("description")) changes.description = checkDescription(endpoint.description, "endpoint.description");
      if (mask.has("event_types")) changes.eventTypes = eventTypeNamesOf(endpoint.eventTypes, "endpoint.event_types");
      if (mask.has("status")) {
        const status = endpointStatusToDb(endpoint.status);
        if (status === undefined) throw invalidArgument("endpoint.status", "must be ENABLED or DISABLED");
        changes.status = status;
      }
      if (mask.has("url")) changes.url = await deps.urlPolicy.check(endpoint.url, "endpoint.url");

      const row = await deps.endpoints.update(merchantId, id, changes);
      if (row === undefined) throw notFound("endpoint");
      return create(UpdateEndpointResponseSchema, { endpoint: endpointMessage(row) });
    },

    async deleteEndpoint(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const { id, wellFormed } = requireId("endpoint_id", request.endpointId, "we");
      // Idempotent in effect: a repeat finds nothing and answers NOT_FOUND, like another merchant's id.
      if (!wellFormed || !(await deps.endpoints.delete(merchantId, id))) throw notFound("endpoint");
      return create(DeleteEndpointResponseSchema, {});
    },

    async rotateSecret(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const graceMicros = gracePeriodMicros(request.gracePeriod);
      const { id, wellFormed } = requireId("endpoint_id", request.endpointId, "we");
      if (!wellFormed) throw notFound("endpoint");
      const secret = generateSigningSecret();
      const row = await deps.endpoints.rotateSecret(merchantId, id, deps.secretBox.seal(secret, id), graceMicros);
      if (row === undefined) throw notFound("endpoint");
      return create(RotateSecretResponseSchema, { endpoint: endpointMessage(row), secret });
    },

    async sendTestEvent(request) {
      const merchantId = requireMerchantId(request.merchantId);
      const endpoint = await findEndpoint(merchantId, request.endpointId);
      if (endpoint.status !== "ENABLED") throw endpointDisabled();
      const eventId = newId("evt");
      const event = buildTestEvent(eventId, now());
      const scheduled = await deps.schedule.insertTestEvent({
        merchantId,
        endpointId: endpoint.id,
        eventId,
        deliveryId: newId("whd"),
        ...event,
      });
      // Deleted between the two statements: answer as if it had never existed.
      if (scheduled === undefined) throw notFound("endpoint");
      deps.onScheduled();
      return create(SendTestEventResponseSchema, scheduled);
    },
  };
}
