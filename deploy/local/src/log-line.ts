const HIDDEN = new Set(["level", "time", "msg", "name", "pid", "hostname", "v"]);

function renderValue(value: unknown): string {
  if (typeof value === "string") return /[\s"=]/.test(value) ? JSON.stringify(value) : value;
  return JSON.stringify(value) ?? String(value);
}

/**
 * One child output line made readable: a pino JSON line becomes `HH:MM:SS LEVEL message k=v …`
 * (an error's stack follows on its own lines); anything else passes through unchanged.
 */
export function formatLogLine(line: string): string {
  if (!line.startsWith("{")) return line;
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof record.msg !== "string" && record.level === undefined) return line;
  const time = typeof record.time === "string" ? record.time.slice(11, 19) : new Date().toISOString().slice(11, 19);
  const level = String(record.level ?? "info").toUpperCase();
  const fields: string[] = [];
  let stack: string | undefined;
  for (const [key, value] of Object.entries(record)) {
    if (HIDDEN.has(key)) continue;
    if (key === "err" && value && typeof value === "object") {
      const error = value as { message?: string; stack?: string };
      fields.push(`err=${renderValue(error.message ?? "")}`);
      stack = error.stack;
      continue;
    }
    fields.push(`${key}=${renderValue(value)}`);
  }
  const text = [time, level.padEnd(5), String(record.msg ?? ""), ...fields].filter((part) => part !== "").join(" ");
  return stack && /ERROR|FATAL|WARN/.test(level) ? `${text}\n${stack}` : text;
}

/** Prefixes every line of `text` with the process name, aligned. */
export function prefixLines(name: string, text: string): string {
  const prefix = `[${name}]`.padEnd(10);
  return text
    .split("\n")
    .map((line) => `${prefix} ${line}`)
    .join("\n");
}
