import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { expect } from "vitest";
import { createOpenApiDocument } from "../openapi.ts";

/**
 * Checks a live response against the OpenAPI document: the operation's response for that status
 * exists, the body validates against its schema (Ajv 2020-12, the components registered), the content
 * type is the documented one, and every documented header is present.
 */

interface LiveResponse {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

type Operation = { responses: Record<string, { headers?: Record<string, { $ref: string }>; content?: Record<string, { schema: unknown }> }> };

export function createOpenApiValidator(document: Record<string, unknown> = createOpenApiDocument()) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (ajv: Ajv2020) => void)(ajv);
  ajv.addSchema(document, "openapi.json");
  const paths = document.paths as Record<string, Record<string, Operation>>;

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
      const pointer = `openapi.json#/paths/${path.replaceAll("~", "~0").replaceAll("/", "~1")}/${method}/responses/${response.statusCode}/content/${contentType!.replace("/", "~1")}/schema`;
      const validate = ajv.getSchema(pointer);
      expect(validate, pointer).toBeDefined();
      const valid = validate!(JSON.parse(response.body));
      expect(validate!.errors ?? [], `${method} ${path} ${response.statusCode} body`).toEqual([]);
      expect(valid).toBe(true);
    },
  };
}
