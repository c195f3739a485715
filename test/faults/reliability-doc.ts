import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const BEGIN = "<!-- faults:table:begin -->";
const END = "<!-- faults:table:end -->";

/** Replaces the figures between the markers of docs/reliability.md (the prose around them is kept). */
export function writeReliabilityTable(table: string, now = new Date()): void {
  const path = fileURLToPath(new URL("../../docs/reliability.md", import.meta.url));
  if (!existsSync(path)) return;
  const text = readFileSync(path, "utf8");
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (start < 0 || end < start) return;
  const block = `${BEGIN}\nLast run: ${now.toISOString().slice(0, 16).replace("T", " ")} UTC, \`npm run test:faults\`.\n\n${table}\n${END}`;
  writeFileSync(path, text.slice(0, start) + block + text.slice(end + END.length));
}
