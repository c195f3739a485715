import { describe, expect, it } from "vitest";
import { unnestColumns } from "./unnest-columns.ts";

describe("unnestColumns", () => {
  const rows = [
    { id: "a", count: 1, latency: 10n, note: null },
    { id: "b", count: 2, latency: 20n, note: "late" },
    { id: "c", count: 3, latency: 30n, note: null },
  ];

  it("returns one array per picker, in picker order, each in row order", () => {
    const [ids, counts, latencies, notes] = unnestColumns(rows, [(r) => r.id, (r) => r.count, (r) => r.latency.toString(), (r) => r.note]);
    expect(ids).toEqual(["a", "b", "c"]);
    expect(counts).toEqual([1, 2, 3]);
    expect(latencies).toEqual(["10", "20", "30"]);
    expect(notes).toEqual([null, "late", null]);
  });

  it("calls each picker with the row alone (no index), so a function like parseInt can be a picker", () => {
    const [parsed] = unnestColumns(["10", "10", "10"], [Number.parseInt]);
    expect(parsed).toEqual([10, 10, 10]);
    const seen: unknown[][] = [];
    unnestColumns(rows, [(...args: unknown[]) => seen.push(args)]);
    expect(seen).toEqual(rows.map((row) => [row]));
  });

  it("gives one empty array per picker for no rows, so the statement still gets all its parameters", () => {
    expect(unnestColumns([] as { id: string }[], [(r) => r.id, (r) => r.id.length])).toEqual([[], []]);
  });
});
