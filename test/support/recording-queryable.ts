import type { Queryable } from "@subdata/runtime";

/** `target`, recording the SQL text of every statement sent through it in `statements`, in order. */
export function recordingQueryable(target: Queryable, statements: string[]): Queryable {
  return {
    query: (...args: unknown[]) => {
      const first = args[0];
      statements.push(typeof first === "string" ? first : String((first as { text?: string }).text));
      return (target.query as (...a: unknown[]) => unknown)(...args);
    },
  } as Queryable;
}
