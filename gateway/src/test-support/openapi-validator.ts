import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { expect } from "vitest";
import { createOpenApiDocument } from "../openapi.ts";

/**
 * Checks a live response against the OpenAPI document: the operation's response for that status
 * exists, the body validates against its schema (Ajv 2020-12, the components registered), the content
 * type is the documented one, and every documented header is present. Checks a webhook delivery the
 * same way against the document's `webhooks` entry for its event type: the request body against the
 * documented request body, each documented header parameter present and valid.
 */

interface LiveResponse {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

/** A request subdata sent to a webhook receiver, headers lower-cased as Node gives them. */
interface LiveDelivery {
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

type HeaderParameter = { name: string; in: string; required?: boolean };
type Webhook = { post: { parameters: HeaderParameter[]; requestBody: { content: Record<string, unknown> } } };

type Operation = { responses: Record<string, { headers?: Record<string, { $ref: string }>; content?: Record<string, { schema: unknown }> }> };

export function createOpenApiValidator(document: Record<string, unknown> = createOpenApiDocument()) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (ajv: Ajv2020) => void)(ajv);
  ajv.addSchema(document, "openapi.json");
  const paths = document.paths as Record<string, Record<string, Operation>>;
  const webhooks = document.webhooks as Record<string, Webhook>;
  const pointerToken = (token: string) => token.replaceAll("~", "~0").replaceAll("/", "~1");

  return {
    /** `path` is the template under /api/v1, e.g. "/subscriptions/{id}". */
    validate(path: string, method: "get" | "head", response: LiveResponse): void {
      const operation = paths[path]?.[method];
      expect(operation, `${method} ${path} is documented`).toBeDefined();
      const documented = operation!.responses[String(response.statusCode)];
      expect(documented, `${method} ${path} documents status ${response.statusCode}`).toBeDefined();
      for (const name of Object.keys(documented!.headers ?? {})) {
        if (name === "Cache-Control") expect(response.headers["cache-control"]).toBe("private, no-store");
        expect(response.headers[name.toLowerCase()], `header ${name} on ${response.statusCode}`).toBeDefined();
      }
      if (method === "head") {
        expect(response.body).toBe("");
        return;
      }
      const [contentType] = Object.keys(documented!.content ?? {});
      expect(String(response.headers["content-type"]).split(";")[0]).toBe(contentType);
      const pointer = `openapi.json#/paths/${pointerToken(path)}/${method}/responses/${response.statusCode}/content/${pointerToken(contentType!)}/schema`;
      const validate = ajv.getSchema(pointer);
      expect(validate, pointer).toBeDefined();
      const valid = validate!(JSON.parse(response.body));
      expect(validate!.errors ?? [], `${method} ${path} ${response.statusCode} body`).toEqual([]);
      expect(valid).toBe(true);
    },

    /** Checks a delivery against the `webhooks` entry named by its body's `type`; returns that type. */
    validateWebhook(delivery: LiveDelivery): string {
      const type = (JSON.parse(delivery.body) as { type?: unknown }).type;
      expect(typeof type, "the body names its type").toBe("string");
      const operation = webhooks[type as string]?.post;
      expect(operation, `webhook ${String(type)} is documented`).toBeDefined();
      operation!.parameters.forEach((parameter, index) => {
        if (parameter.in !== "header") return;
        const value = delivery.headers[parameter.name.toLowerCase()];
        if (parameter.required) expect(value, `header ${parameter.name} of ${String(type)}`).toBeDefined();
        if (value === undefined) return;
        const validate = ajv.getSchema(`openapi.json#/webhooks/${pointerToken(type as string)}/post/parameters/${index}/schema`);
        expect(validate!(value), `header ${parameter.name}: ${String(value)}`).toBe(true);
      });
      const contentType = String(delivery.headers["content-type"]).split(";")[0]!;
      expect(Object.keys(operation!.requestBody.content)).toEqual([contentType]);
      const pointer = `openapi.json#/webhooks/${pointerToken(type as string)}/post/requestBody/content/${pointerToken(contentType)}/schema`;
      const validate = ajv.getSchema(pointer);
      expect(validate, pointer).toBeDefined();
      const valid = validate!(JSON.parse(delivery.body));
      expect(validate!.errors ?? [], `webhook ${String(type)} body`).toEqual([]);
      expect(valid).toBe(true);
      return type as string;
    },
  };
}
