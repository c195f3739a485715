/**
 * The UTC midnight of year-month-day (month 1–12) in milliseconds since the epoch, or undefined when
 * that names no day of the calendar: Date.UTC and Date.parse roll 2026-02-30 over to March 2 instead
 * of refusing it, so a date an operator typed is checked here.
 */
export function calendarDayMs(year: number, month: number, day: number): number | undefined {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day); // not Date.UTC, which reads years 0–99 as 1900–1999
  const real = date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
  return real ? date.getTime() : undefined;
}

/** Whether `text` starts with a YYYY-MM-DD that names a day of the calendar. */
export function startsWithCalendarDate(text: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})/.exec(text);
  return match !== null && calendarDayMs(Number(match[1]), Number(match[2]), Number(match[3])) !== undefined;
}
