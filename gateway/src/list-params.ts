import type { ParamError } from "./problem.ts";
import { ProblemError } from "./problem.ts";
import type { JsonSchema } from "./schemas.ts";

/**
 * Strict query strings. Fastify validates them against the route's schema (schemas.ts); this file does
 * the two things a schema cannot: it notices repeated parameters (the parser keeps them as arrays) and
 * turns strict decimal integers into numbers for integer-typed parameters, so "1e2", " 5" or "0x10"
 * stay strings and fail validation. It also names the bad parameters of a failed validation.
 */

export type RawQuery = Record<string, string | string[]>;

/** URLSearchParams semantics ("+" is a space); a repeated name becomes an array, for the check below. */
export function parseQueryString(text: string): RawQuery {
  const query: RawQuery = Object.create(null);
  for (const [name, value] of new URLSearchParams(text)) {
    const existing = query[name];
    if (existing === undefined) query[name] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else query[name] = [existing, value];
  }
  return query;
}

const DECIMAL_INTEGER = /^(0|[1-9][0-9]{0,8})$/;

/**
 * Refuses repeated parameters (400 repeated_parameter) and converts integer-typed parameters in place.
 * Runs in preValidation, before Fastify's schema check.
 */
export function prepareQuery(query: RawQuery, schema: JsonSchema): void {
  const repeated: ParamError[] = Object.keys(query)
    .filter((name) => Array.isArray(query[name]))
    .map((param) => ({ param, code: "repeated_parameter" }));
  if (repeated.length > 0) throw new ProblemError("invalid_parameter", { errors: repeated, detail: "A query parameter was given more than once." });
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const mutable = query as Record<string, unknown>;
  for (const [name, value] of Object.entries(query)) {
    if (properties[name]?.type === "integer" && typeof value === "string" && DECIMAL_INTEGER.test(value)) {
      mutable[name] = Number(value);
    }
  }
}

/** The subset of an Ajv error this file reads. */
export interface ValidationIssue {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
}

const CODE_BY_KEYWORD: Record<string, string> = {
  additionalProperties: "unknown_parameter",
  type: "invalid_value",
  enum: "invalid_value",
  minimum: "out_of_range",
  maximum: "out_of_range",
  minLength: "invalid_value",
  maxLength: "invalid_value",
  pattern: "invalid_format",
  required: "missing",
};

/** Ajv errors of a query-string validation → one entry per bad public parameter. */
export function paramErrorsOf(issues: readonly ValidationIssue[]): ParamError[] {
  const errors: ParamError[] = [];
  const seen = new Set<string>();
  for (const issue of issues) {
    const param =
      issue.keyword === "additionalProperties"
        ? String(issue.params.additionalProperty)
        : issue.keyword === "required"
          ? String(issue.params.missingProperty)
          : (issue.instancePath.replace(/^\//, "").split("/")[0] ?? "");
    if (seen.has(param)) continue;
    seen.add(param);
    errors.push({ param, code: CODE_BY_KEYWORD[issue.keyword] ?? "invalid_value" });
  }
  return errors;
}
