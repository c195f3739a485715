import { expect } from "vitest";

/** What a gateway response may look like, whatever was sent. */
export interface AnyResponse {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

const STACK_TRACE = /\n\s+at |node:internal|\.ts:\d+|Error: |ConnectError|\bstack\b/;

/**
 * Never a 5xx, never a stack trace; every error is application/problem+json with one of the
 * documented codes, the status that code documents, and a Request-Id.
 */
export function expectDocumentedOutcome(response: AnyResponse, allowed: Record<number, readonly string[]>): void {
  const context = `${response.statusCode} ${response.body.slice(0, 300)}`;
  expect(response.statusCode, context).toBeLessThan(500);
  expect(response.headers["request-id"], context).toBeTruthy();
  expect(response.body, context).not.toMatch(STACK_TRACE);
  if (response.statusCode === 200) return;
  expect(Object.keys(allowed).map(Number), context).toContain(response.statusCode);
  expect(String(response.headers["content-type"]), context).toContain("application/problem+json");
  const problem = JSON.parse(response.body) as { code: string; status: number; type: string; request_id: string };
  expect(allowed[response.statusCode], context).toContain(problem.code);
  expect(problem.status, context).toBe(response.statusCode);
  expect(problem.request_id, context).toBe(response.headers["request-id"]);
  expect(problem.type, context).toMatch(/^https:\/\/subdata\.dev\/problems\//);
}
