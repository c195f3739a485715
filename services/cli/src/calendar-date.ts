/**
 * Whether `text` starts with a YYYY-MM-DD that names a day of the calendar. Date.parse rolls
 * 2026-02-30 over to March 2 instead of refusing it, so a time an operator typed is checked here first.
 */
export function startsWithCalendarDate(text: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})/.exec(text);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]) - 1, Number(match[3])];
  const date = new Date(0);
  date.setUTCFullYear(year, month, day); // not Date.UTC, which reads years 0–99 as 1900–1999
  return date.getUTCFullYear() === year && date.getUTCMonth() === month && date.getUTCDate() === day;
}
