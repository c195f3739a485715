/** The median of the values (the mean of the middle two for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The median of each key over the records (NaN for a key a record lacks, as median skips NaN). */
export function medianOfEach<Key extends string>(records: ReadonlyArray<Readonly<Record<Key, number>>>): Record<Key, number> {
  const keys = new Set(records.flatMap((record) => Object.keys(record) as Key[]));
  return Object.fromEntries([...keys].map((key) => [key, median(records.map((record) => record[key] ?? Number.NaN))])) as Record<Key, number>;
}

/** The q-quantile (0–1) by nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}
