/**
 * Batch statements pass their rows to Postgres as `unnest($1::text[], $2::int[], …)`, which wants one
 * array per column rather than one object per row. `unnestColumns(rows, [(r) => r.id, (r) => r.count])` returns `[ids, counts]`: one
 * array per picker, in picker order (the order of the statement's $n), each typed from its picker.
 */
export type UnnestColumns<Pickers extends readonly ((row: never) => unknown)[]> = {
  -readonly [K in keyof Pickers]: Pickers[K] extends (row: never) => infer Value ? Value[] : never;
};

export function unnestColumns<Row, const Pickers extends readonly ((row: Row) => unknown)[]>(rows: readonly Row[], pickers: Pickers): UnnestColumns<Pickers> {
  return pickers.map((pick) => rows.map((row) => pick(row))) as UnnestColumns<Pickers>;
}
