import fc from "fast-check";

/**
 * Strings that break naive parsers: arbitrary text, graphemes and raw code units, plus the known-bad
 * values of the input under test (each suite lists its own: numbers for query parameters, option-like
 * words for the CLI).
 */
export function hostileText(knownBad: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: "grapheme", maxLength: 20 }),
    fc.string({ unit: "binary", maxLength: 20 }),
    fc.constantFrom(...knownBad),
  );
}
