import { randomBytes } from "node:crypto";
import { PassThrough } from "node:stream";
import { commandModules } from "../../services/cli/src/command-modules.ts";
import { runCli } from "@subdata/cli";
import { eventTypeNames } from "@subdata/events";
import { Command } from "commander";
import fc from "fast-check";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type AuthHarness, startAuthService } from "../auth/auth-harness.ts";
import { emptyDirectory, runCli as spawnCli } from "../cli/run-cli.ts";
import { type RunningConsoleServer, startConsoleServer } from "../console/console-server.ts";
import { adminPool, fixturesOf, type RunningWebhookServer, startWebhookServer } from "../webhook-api/webhook-server.ts";
import { hostileText } from "./hostile-text.ts";

/**
 * Property-based hostile input against the operator CLI: every argument and option value of every
 * command, in-process through runCli with the real command modules, against this run's database and
 * the real auth and webhook services on port 0 (plus a few runs of the real binary). Whatever is
 * passed, the CLI exits 0 or 1, never prints a stack trace, names the bad argument in a one-line
 * error, writes nothing when it refuses, and still does its work when the input is valid.
 */

const RUNS = 120;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

// Strings that break naive parsers: empty, huge, NUL and control characters, unicode, leading dashes,
// numbers out of range, malformed URLs and ids, SQL and template injections, prototype keys.
const nasty = hostileText([
  "",
  " ",
  "-",
  "--",
  "-x",
  "--json",
  "--help",
  "\u0000",
  "mer_\u0000",
  "a\nb",
  "\r\u001b[2J\u001b[31mok",
  "\u009b31m",
  "\u202egnp.exe",
  "😀",
  "0",
  "-1",
  "1.5",
  "1e3",
  "0x10",
  "+5",
  " 5",
  "NaN",
  "Infinity",
  "99999999999999999999999",
  "9007199254740993",
  "999999w",
  "9999999d",
  "0s",
  "-5m",
  "9999-12-31T23:59:59Z",
  "+275760-09-13T00:00:00Z",
  "0000-01-01T00:00:00Z",
  "2026-02-30T00:00:00Z",
  "2026-01-01T25:00:00Z",
  "' OR 1=1 --",
  "'; DROP TABLE merchants; --",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j lookup string, sent as it is
  "${jndi:ldap://x}",
  "%00",
  "../../etc/passwd",
  "__proto__",
  "constructor",
  "toString",
  "subscription.created,__proto__",
  "1",
  "mer_",
  "sub_",
  "we_",
  "key_",
  `mer_${"a".repeat(65)}`,
  `we_${"0".repeat(32)}`,
  `sub_${"f".repeat(32)}`,
  "http://",
  "https://",
  "https://[::1",
  "javascript:alert(1)",
  "file:///etc/passwd",
  "https://user:pass@example.com/",
  "https://example.com/#fragment",
  `https://${"a".repeat(3_000)}.com/`,
  "a".repeat(100_000),
]);

/** A stack trace, or the name of an error class that only a bug would print. */
const STACK_TRACE = /\n\s+at \S|\b(?:TypeError|RangeError|ReferenceError|SyntaxError)\b|node:internal/;
/** Raw control characters in an error line could rewrite the operator's terminal. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
const CALLER_ERRORS = ["usage", "invalid_argument", "not_found", "failed_precondition"];

/** Text as it comes back from UTF-8 (Postgres, a process's arguments): half a surrogate pair becomes U+FFFD. */
const asUtf8 = (text: string) => Buffer.from(text, "utf8").toString("utf8");

function sink(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  return { stream, text: () => Buffer.concat(chunks).toString("utf8") };
}

/** The CLI in-process, exactly as main.ts runs it, from an empty directory (no .subdata/dev.env). */
async function cli(args: readonly string[], env: Record<string, string>, cwd: string): Promise<Run> {
  const stdout = sink();
  const stderr = sink();
  const code = await runCli({ argv: ["node", "subdata", ...args], env, cwd, stdout: stdout.stream, stderr: stderr.stream, modules: commandModules });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

/**
 * Exit 0, or exit 1 with a one-line `error: …` on stderr (and nothing on stdout) or, with --json, one
 * JSON document on stdout; never a stack trace. Returns the error's code and message for a failure.
 */
function expectCleanOutcome(run: Run, json: boolean, context: string): { code: string; message: string } | undefined {
  const shown = `${context}\n=> ${run.code}\nstdout: ${run.stdout.slice(0, 500)}\nstderr: ${run.stderr.slice(0, 500)}`;
  expect([0, 1], shown).toContain(run.code);
  expect(run.stdout + run.stderr, shown).not.toMatch(STACK_TRACE);
  if (run.code === 0) {
    // --help (or -h) among the words prints the usage instead of running the command.
    if (json && !run.stdout.startsWith("Usage: ")) expect(() => JSON.parse(run.stdout), shown).not.toThrow();
    return undefined;
  }
  expect(run.stderr, shown).not.toMatch(RAW_CONTROL);
  if (json) {
    const document = JSON.parse(run.stdout) as { error: { code: string; message: string } };
    expect(document, shown).toEqual({ error: { code: expect.any(String), message: expect.any(String) } });
    return document.error;
  }
  expect(run.stdout, shown).toBe("");
  const match = /^error: ([^\n]*)\n(?:\(Did you mean [^\n]*\)\n)?(?:\(run with --help for usage\)\n)?$/.exec(run.stderr);
  expect(match, shown).not.toBeNull();
  return { code: "", message: match![1]! };
}

type Tagged = { value: string; valid: boolean };
const valid = (value: string): Tagged => ({ value, valid: true });
const invalid = (value: string): Tagged => ({ value, valid: false });

/** Text that is a whole number from min to max: the oracle for every count the CLI takes. */
const isWholeNumber = (text: string, min: number, max: number) => /^\d+$/.test(text) && Number(text) >= min && Number(text) <= max;

function wholeNumbers(min: number, max: number): fc.Arbitrary<Tagged> {
  return fc
    .oneof(
      nasty,
      fc.integer({ min: min - 5, max: max + 5 }).map(String),
      fc.bigInt({ min: 0n, max: 10n ** 30n }).map(String),
      fc.constantFrom(String(max), String(max + 1), `0${min}`, `${min}.0`, `+${min}`, ` ${min}`, `${min} `, "1e2", "0x10"),
    )
    .map((text) => ({ value: text, valid: isWholeNumber(text, min, max) }));
}

/** RFC 3339 text for a moment, in UTC or at a whole-hour offset. */
function rfc3339(date: Date, offsetHours: number): string {
  if (offsetHours === 0) return date.toISOString();
  const shifted = new Date(date.getTime() + offsetHours * 3_600_000).toISOString().slice(0, 19);
  return `${shifted}${offsetHours < 0 ? "-" : "+"}${String(Math.abs(offsetHours)).padStart(2, "0")}:00`;
}

const dates = (min: string, max: string) => fc.date({ min: new Date(min), max: new Date(max), noInvalidDate: true });
const offsets = fc.integer({ min: -12, max: 14 });
/** Days that do not exist, which Date.parse would roll over into the next month. */
const missingDays = fc
  .tuple(fc.integer({ min: 1970, max: 2200 }), fc.constantFrom("02-30", "02-31", "04-31", "06-31", "09-31", "11-31", "13-01", "00-10", "01-00", "01-32"))
  .map(([year, day]) => `${year}-${day}T00:00:00Z`);

/** Nasty text that cannot be a time or a duration (it has no digit where one must start). */
const notATime = nasty.filter((text) => !/^\s*\d/.test(text));
/** Valid times and durations with a space around them, or inside: no option trims. */
const spaced = (text: string) => [` ${text}`, `${text} `, `${text}\t`, text.replace("T", " ")];

const seedNow = fc.oneof(
  fc.tuple(dates("1970-01-01T00:00:00Z", "2249-12-31T11:59:59Z"), offsets).map(([date, offset]) => valid(rfc3339(date, offset))),
  fc
    .oneof(
      dates("0000-01-01T00:00:00Z", "1969-12-30T00:00:00Z"),
      dates("2250-01-02T00:00:00Z", "9999-12-31T00:00:00Z"),
      dates("+010000-01-01T00:00:00Z", "+200000-01-01T00:00:00Z"),
    )
    .map((date) => invalid(date.toISOString())),
  missingDays.map(invalid),
  // An offset is required, as for webhooks replay: without one the time would be some machine's local time.
  dates("1970-01-01T00:00:00Z", "2249-12-31T00:00:00Z").map((date) => invalid(date.toISOString().replace("Z", ""))),
  dates("1970-01-01T00:00:00Z", "2249-12-31T00:00:00Z").chain((date) => fc.constantFrom(...spaced(date.toISOString())).map(invalid)),
  notATime.map(invalid),
);

const DURATION_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
/** The one duration grammar of every option, untrimmed: its milliseconds, or undefined. */
function durationMs(text: string): number | undefined {
  const match = /^(\d+)([smhdw])$/.exec(text);
  return match ? Number(match[1]) * DURATION_MS[match[2]!]! : undefined;
}

/** An RFC 3339 time from year 1 to 9999 or a duration ago (s, m, h, d, w) that stays after year 1. */
const timeOrAgo = fc.oneof(
  fc.tuple(dates("0001-01-02T00:00:00Z", "9999-12-30T00:00:00Z"), offsets).map(([date, offset]) => valid(rfc3339(date, offset))),
  fc.tuple(fc.integer({ min: 0, max: 700_000 }), fc.constantFrom("s", "m", "h", "d")).map(([amount, unit]) => valid(`${amount}${unit}`)),
  fc.integer({ min: 0, max: 100_000 }).map((amount) => valid(`${amount}w`)),
  fc.constantFrom("5w", "007d").map(valid),
  fc
    .constantFrom(
      "800000d",
      "120000w",
      "9999999d",
      "12345678d",
      `${"9".repeat(400)}s`,
      "5y",
      "5W",
      "-5m",
      "5 d",
      "1.5h",
      "2026-02-01T00:00:00",
      "2026-02-01T24:00:00Z",
    )
    .map(invalid),
  fc
    .oneof(
      fc.constantFrom("2h", "0s", "7d", "2w"),
      dates("0001-01-02T00:00:00Z", "9999-12-30T00:00:00Z").map((date) => date.toISOString()),
    )
    .chain((text) =>
      fc
        .constantFrom(...spaced(text))
        .filter((each) => each !== text)
        .map(invalid),
    ),
  missingDays.map(invalid),
  notATime.map(invalid),
);

/** A day (YYYY-MM-DD, UTC) or an RFC 3339 time, from year 1 to 9999, for audit export's range. */
const exportBoundary = fc.oneof(
  fc.tuple(dates("0001-01-02T00:00:00Z", "9999-12-30T00:00:00Z"), offsets).map(([date, offset]) => valid(rfc3339(date, offset))),
  dates("0001-01-02T00:00:00Z", "9999-12-30T00:00:00Z").map((date) => valid(date.toISOString().slice(0, 10))),
  fc.constantFrom("0000-06-01", "0000-06-01T00:00:00Z", "2026-02-01T00:00:00", "2026-02-30", "2026-1-01", "20260101", "1h", "7d").map(invalid),
  dates("0001-01-02T00:00:00Z", "9999-12-30T00:00:00Z")
    .map((date) => date.toISOString().slice(0, 10))
    .chain((day) =>
      fc
        .constantFrom(...spaced(day))
        .filter((each) => each !== day)
        .map(invalid),
    ),
  missingDays.map(invalid),
  notATime.map(invalid),
);

/** maintain --every: m, h or d, above zero, at most a week. */
const everyDuration = fc
  .oneof(
    nasty,
    fc.tuple(fc.integer({ min: 0, max: 20_000 }), fc.constantFrom("s", "m", "h", "d", "w", "")).map(([amount, unit]) => `${amount}${unit}`),
    fc.constantFrom("10080m", "10081m", "168h", "169h", "7d", "8d", "1h", " 1h", "1h ", "1H", "01h"),
  )
  .map((text) => {
    const match = /^(\d+)([mhd])$/.exec(text);
    const ms = match ? Number(match[1]) * DURATION_MS[match[2]!]! : 0;
    return { value: text, valid: ms > 0 && ms <= 7 * DURATION_MS.d! };
  });

const expiresIn = fc
  .oneof(
    nasty,
    fc.tuple(fc.integer({ min: 0, max: 999_999 }), fc.constantFrom("s", "m", "h", "d", "w", "y", "")).map(([amount, unit]) => `${amount}${unit}`),
    fc.constantFrom("36500d", "36501d", "5214w", "5215w", "999999w", "1000000d", "0000030d", "0d", " 30d", "30d ", "30D"),
  )
  .map((text) => {
    const ms = durationMs(text);
    return { value: text, valid: ms !== undefined && ms > 0 && ms <= 36_500 * DURATION_MS.d! };
  });

// Every name the webhook service accepts: subscription, charge and order events.
const EVENT_NAMES = [...eventTypeNames];
const eventLists = fc
  .oneof(
    nasty,
    fc
      .array(fc.oneof(fc.constantFrom(...EVENT_NAMES, "", " ", "subscription.*", "SUBSCRIPTION.CREATED"), nasty), { maxLength: 4 })
      .map((names) => names.join(",")),
    fc.array(fc.constantFrom(...EVENT_NAMES), { minLength: 1, maxLength: 3 }).map((names) => names.map((name) => ` ${name} `).join(",")),
  )
  .map((text) => ({
    value: text,
    valid: text
      .split(",")
      .map((name) => name.trim())
      .filter((name) => name !== "")
      .every((name) => EVENT_NAMES.includes(name)),
  }));

const DELIVERY_STATUSES = ["PENDING", "SUCCEEDED", "FAILED", "CANCELLED"];
const SUBSCRIPTION_STATUSES = ["ACTIVE", "TRIALING", "PAST_DUE", "PAUSED", "CANCELLED", "EXPIRED"];
/** What charges set-status takes: PARTIALLY_REFUNDED needs an amount (charges refund). */
const CHARGE_STATUSES = ["PENDING", "SUCCEEDED", "FAILED", "SKIPPED", "REFUNDED"];
const ORDER_STATUSES = ["PAID", "FULFILLED", "CANCELLED", "REFUNDED"];
/** The failure codes the CLI has a message for, so --failure-code needs no --failure-message. */
const FAILURE_CODES = ["card_declined", "insufficient_funds", "expired_card", "incorrect_cvc", "authentication_required", "processing_error"];
/** Names in any case, plus the enum's numbers and neighbours, which must not pass for names. */
const statusWords = (names: readonly string[]) =>
  fc
    .oneof(
      nasty,
      fc.constantFrom(...names).chain((name) => fc.mixedCase(fc.constant(name))),
      fc.constantFrom("0", "1", "2", "UNSPECIFIED", "DELIVERY_STATUS_PENDING", "DELETED", "ACTIVE "),
    )
    .map((text) => ({ value: text, valid: names.includes(text.toUpperCase()) }));

/** Digits with at most one decimal point: the grammar of every amount, before its currency is known. */
const isDecimal = (text: string, allowZero: boolean) => /^\d+(?:\.\d+)?$/.test(text) && (allowZero || /[1-9]/.test(text));

function decimals(allowZero: boolean): fc.Arbitrary<Tagged> {
  return fc
    .oneof(
      nasty,
      fc
        .tuple(fc.bigInt({ min: 0n, max: 10n ** 25n }), fc.option(fc.stringMatching(/^\d{1,6}$/)))
        .map(([whole, fraction]) => (fraction === null ? `${whole}` : `${whole}.${fraction}`)),
      fc.constantFrom("0", "000", "0.00", "1.", ".5", "1.2.3", "1,50", "+1", "-1", " 1", "1 ", "1e2", "0x10", "12.50", "007.5", "1_000"),
    )
    .map((text) => ({ value: text, valid: isDecimal(text, allowZero) }));
}

/**
 * Inputs the CLI checks itself, before it reads a setting or calls anything. With no settings at all,
 * a valid value gets as far as the first setting the command needs (a config error naming it), and an
 * invalid one is refused naming the option: so the check is exact in both directions.
 */
interface LocalCheck {
  name: string;
  /** Whole command lines with one value in the input under test, and whether that value is valid. */
  cases: fc.Arbitrary<{ args: string[]; valid: boolean }>;
  mentions: RegExp;
  /** The setting a valid value leads to. */
  setting: string;
}

/** Whether text parses as a URL with one of these schemes. */
function isUrlOf(text: string, protocols: readonly string[]): boolean {
  try {
    return protocols.includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** audit list --status: a class, in any case, or one code of 100–599. */
const auditStatus = fc.oneof(
  fc.constantFrom("2xx", "3xx", "4XX", "5xx", "errors", "Errors").map(valid),
  fc.integer({ min: 100, max: 599 }).map((code) => valid(String(code))),
  fc.constantFrom("1xx", "600", "099", "40", "4044", "404 ", "-404", "errors,4xx", "__proto__", "constructor", "toString", "").map(invalid),
);
const at = (values: fc.Arbitrary<Tagged>, args: (value: string) => string[]) => values.map(({ value, valid }) => ({ args: args(value), valid }));
/** Anything but NUL, which no real argv can carry and Postgres cannot store. */
const anyText = nasty.map((text) => ({ value: text, valid: !text.includes("\u0000") }));
/** Like anyText, for values that must say something. */
const nonEmptyText = nasty.map((text) => ({ value: text, valid: text !== "" && !text.includes("\u0000") }));
const lineItem = (replaced: "sku" | "title" | "quantity" | "unit-price", value: string) => [
  "orders",
  "add-line-item",
  ...Object.entries({ sku: "S", title: "T", quantity: "1", "unit-price": "1.50" }).map(([name, valid]) => `--${name}=${name === replaced ? value : valid}`),
  "--",
  "ord_x",
];

const LOCAL_CHECKS: readonly LocalCheck[] = [
  {
    name: "seed --merchant",
    cases: at(
      fc
        .oneof(nasty, fc.stringMatching(/^mer_[A-Za-z0-9_]{1,64}$/), fc.stringMatching(/^mer_[A-Za-z0-9_.\-é]{0,70}$/))
        .map((text) => ({ value: text, valid: /^mer_[A-Za-z0-9_]{1,64}$/.test(text) })),
      (value) => ["seed", `--merchant=${value}`, "--subscriptions=1"],
    ),
    mentions: /--merchant/,
    setting: "DATABASE_URL",
  },
  {
    name: "seed --subscriptions",
    cases: at(wholeNumbers(1, 10_000_000), (value) => ["seed", "--merchant=mer_x", `--subscriptions=${value}`]),
    mentions: /--subscriptions/,
    setting: "DATABASE_URL",
  },
  {
    name: "seed --batch-size",
    cases: at(wholeNumbers(1, 100_000), (value) => ["seed", "--merchant=mer_x", "--subscriptions=1", `--batch-size=${value}`]),
    mentions: /--batch-size/,
    setting: "DATABASE_URL",
  },
  {
    name: "seed --now",
    cases: at(seedNow, (value) => ["seed", "--merchant=mer_x", "--subscriptions=1", `--now=${value}`]),
    mentions: /--now/,
    setting: "DATABASE_URL",
  },
  {
    name: "seed --name",
    cases: at(anyText, (value) => ["seed", "--merchant=mer_x", "--subscriptions=1", `--name=${value}`]),
    mentions: /--name/,
    setting: "DATABASE_URL",
  },
  {
    name: "seed --seed",
    cases: at(anyText, (value) => ["seed", "--merchant=mer_x", "--subscriptions=1", `--seed=${value}`]),
    mentions: /--seed/,
    setting: "DATABASE_URL",
  },
  {
    name: "subscriptions set-status STATUS",
    cases: at(statusWords(SUBSCRIPTION_STATUSES), (value) => ["subscriptions", "set-status", "--", "sub_x", value]),
    mentions: /STATUS/,
    setting: "DATABASE_URL",
  },
  {
    name: "subscriptions set-status --reason",
    cases: fc.tuple(fc.constantFrom(...SUBSCRIPTION_STATUSES), nasty).map(([status, reason]) => ({
      args: ["subscriptions", "set-status", `--reason=${reason}`, "--", "sub_x", status],
      valid: status === "CANCELLED" && !reason.includes("\u0000"),
    })),
    mentions: /--reason/,
    setting: "DATABASE_URL",
  },
  {
    name: "charges set-status STATUS",
    cases: at(fc.oneof(statusWords(CHARGE_STATUSES), fc.mixedCase(fc.constant("PARTIALLY_REFUNDED")).map(invalid)), (value) => [
      "charges",
      "set-status",
      "--",
      "ch_x",
      value,
    ]),
    mentions: /STATUS/,
    setting: "DATABASE_URL",
  },
  {
    name: "charges set-status --failure-code",
    cases: fc.tuple(fc.constantFrom(...CHARGE_STATUSES), nasty).map(([status, code]) => ({
      args: ["charges", "set-status", `--failure-code=${code}`, "--failure-message=Declined.", "--", "ch_x", status],
      valid: status === "FAILED" && code !== "" && !code.includes("\u0000"),
    })),
    mentions: /--failure-code/,
    setting: "DATABASE_URL",
  },
  {
    name: "charges set-status --failure-code without --failure-message",
    cases: at(
      fc.oneof(
        fc.constantFrom(...FAILURE_CODES).map(valid),
        anyText.map(({ value }) => ({ value, valid: FAILURE_CODES.includes(value) })),
      ),
      (value) => ["charges", "set-status", `--failure-code=${value}`, "--", "ch_x", "FAILED"],
    ),
    mentions: /--failure-code/,
    setting: "DATABASE_URL",
  },
  {
    name: "charges set-status --failure-message",
    cases: fc.tuple(fc.constantFrom(...CHARGE_STATUSES), nasty).map(([status, message]) => ({
      args: ["charges", "set-status", `--failure-message=${message}`, "--", "ch_x", status],
      valid: status === "FAILED" && message !== "" && !message.includes("\u0000"),
    })),
    mentions: /--failure-message/,
    setting: "DATABASE_URL",
  },
  {
    name: "charges refund --amount",
    cases: at(decimals(false), (value) => ["charges", "refund", `--amount=${value}`, "--", "ch_x"]),
    mentions: /--amount/,
    setting: "DATABASE_URL",
  },
  {
    name: "orders set-status STATUS",
    cases: at(statusWords(ORDER_STATUSES), (value) => ["orders", "set-status", "--", "ord_x", value]),
    mentions: /STATUS/,
    setting: "DATABASE_URL",
  },
  { name: "orders add-line-item --sku", cases: at(nonEmptyText, (value) => lineItem("sku", value)), mentions: /--sku/, setting: "DATABASE_URL" },
  { name: "orders add-line-item --title", cases: at(nonEmptyText, (value) => lineItem("title", value)), mentions: /--title/, setting: "DATABASE_URL" },
  {
    name: "orders add-line-item --quantity",
    cases: at(wholeNumbers(1, 1_000_000), (value) => lineItem("quantity", value)),
    mentions: /--quantity/,
    setting: "DATABASE_URL",
  },
  {
    name: "orders add-line-item --unit-price",
    cases: at(decimals(true), (value) => lineItem("unit-price", value)),
    mentions: /--unit-price/,
    setting: "DATABASE_URL",
  },
  {
    name: "keys create --expires-in",
    cases: at(expiresIn, (value) => ["keys", "create", "--merchant=mer_x", `--expires-in=${value}`]),
    mentions: /--expires-in/,
    setting: "SUBDATA_CLI_TOKEN",
  },
  {
    name: "audit export --since",
    cases: at(exportBoundary, (value) => ["audit", "export", `--since=${value}`, "--until=9999-12-31", "--output=audit.ndjson.gz"]),
    mentions: /--since/,
    setting: "DATABASE_URL",
  },
  {
    name: "audit export --until",
    cases: at(exportBoundary, (value) => ["audit", "export", "--since=0001-01-01", `--until=${value}`, "--output=audit.ndjson.gz"]),
    mentions: /--until/,
    setting: "DATABASE_URL",
  },
  // Checked for NUL only: any other path is the operator's to choose, and nothing is written before the database answers.
  {
    name: "audit export --output",
    cases: at(anyText, (value) => ["audit", "export", "--since=2026-10-01", "--until=2026-11-01", `--output=${value}`]),
    mentions: /--output/,
    setting: "DATABASE_URL",
  },
  { name: "maintain --every", cases: at(everyDuration, (value) => ["maintain", `--every=${value}`]), mentions: /--every/, setting: "DATABASE_URL" },
  {
    name: "maintain --metrics-port",
    cases: at(wholeNumbers(0, 65_535), (value) => ["maintain", "--every=1h", `--metrics-port=${value}`]),
    mentions: /--metrics-port/,
    setting: "DATABASE_URL",
  },
  {
    name: "audit list --status",
    cases: at(auditStatus, (value) => ["audit", "list", "--merchant=mer_x", `--status=${value}`]),
    mentions: /--status/,
    setting: "SUBDATA_CLI_TOKEN",
  },
  {
    name: "audit list --since",
    cases: at(exportBoundary, (value) => ["audit", "list", "--merchant=mer_x", `--since=${value}`, "--until=9999-12-31"]),
    mentions: /--since/,
    setting: "SUBDATA_CLI_TOKEN",
  },
  {
    name: "audit list --limit",
    cases: at(wholeNumbers(1, 10_000), (value) => ["audit", "list", "--merchant=mer_x", `--limit=${value}`]),
    mentions: /--limit/,
    setting: "SUBDATA_CLI_TOKEN",
  },
  {
    name: "webhooks create --events",
    cases: at(eventLists, (value) => ["webhooks", "create", "--merchant=mer_x", "--url=https://example.com/", `--events=${value}`]),
    mentions: /--events/,
    setting: "SUBDATA_CLI_TOKEN",
  },
  {
    name: "webhooks rotate-secret --grace",
    cases: at(
      fc
        .oneof(
          nasty,
          fc.tuple(fc.integer({ min: 0, max: 99_999_999 }), fc.constantFrom("s", "m", "h", "d", "w", "")).map(([amount, unit]) => `${amount}${unit}`),
          // Both sides of the 7-day limit in every unit.
          fc
            .tuple(fc.integer({ min: 0, max: 1_000_000 }), fc.constantFrom("s", "m", "h", "d", "w"))
            .map(([amount, unit]) => `${Math.floor(amount / (DURATION_MS[unit]! / 1_000))}${unit}`),
          fc.constantFrom(" 24h", "24h ", "0s", "7d", "8d", "1w", "2w", "168h", "169h", "1.5h"),
        )
        .map((text) => {
          const ms = durationMs(text);
          return { value: text, valid: ms !== undefined && ms <= 7 * DURATION_MS.d! };
        }),
      (value) => ["webhooks", "rotate-secret", "--merchant=mer_x", `--grace=${value}`, "--", "we_x"],
    ),
    mentions: /--grace/,
    setting: "SUBDATA_CLI_TOKEN",
  },
  {
    name: "webhooks deliveries --limit",
    cases: at(wholeNumbers(1, 1_000), (value) => ["webhooks", "deliveries", "--merchant=mer_x", `--limit=${value}`, "--", "we_x"]),
    mentions: /--limit/,
    setting: "SUBDATA_CLI_TOKEN",
  },
  {
    name: "webhooks deliveries --status",
    cases: at(statusWords(DELIVERY_STATUSES), (value) => ["webhooks", "deliveries", "--merchant=mer_x", `--status=${value}`, "--", "we_x"]),
    mentions: /--status/,
    setting: "SUBDATA_CLI_TOKEN",
  },
  {
    name: "webhooks replay --since",
    cases: at(timeOrAgo, (value) => ["webhooks", "replay", "--merchant=mer_x", `--since=${value}`, "--", "we_x"]),
    mentions: /--since/,
    setting: "SUBDATA_CLI_TOKEN",
  },
  {
    name: "webhooks replay --until",
    cases: at(timeOrAgo, (value) => ["webhooks", "replay", "--merchant=mer_x", "--since=1h", `--until=${value}`, "--", "we_x"]),
    mentions: /--until/,
    setting: "SUBDATA_CLI_TOKEN",
  },
  {
    name: "webhooks reencrypt-secrets --batch-size",
    cases: at(wholeNumbers(1, 10_000), (value) => ["webhooks", "reencrypt-secrets", `--batch-size=${value}`]),
    mentions: /--batch-size/,
    setting: "SUBDATA_WEBHOOK_SECRET_KEY",
  },
  // The mirror checks every option before it reads its key, and calls nothing before that.
  {
    name: "mirror --api-url",
    cases: at(
      fc
        .oneof(nasty, fc.webUrl(), fc.constantFrom("http://127.0.0.1:8080", "https://h/api/v1", "ftp://h", "postgres://h/x", "http:/x", "127.0.0.1:8080"))
        .map((text) => ({ value: text, valid: !text.includes("\u0000") && isUrlOf(text, ["http:", "https:"]) })),
      (value) => ["mirror", `--api-url=${value}`, "--to=postgres://me@127.0.0.1:9/copy"],
    ),
    mentions: /--api-url/,
    setting: "SUBDATA_API_KEY",
  },
  {
    name: "mirror --to",
    cases: at(
      fc
        .oneof(
          nasty,
          fc.constantFrom("postgres://me@127.0.0.1:9/copy", "postgresql://h/x", "postgres://", "mysql://h/x", "http://h/x", "postgres:x", "127.0.0.1:5432"),
        )
        .map((text) => ({ value: text, valid: !text.includes("\u0000") && isUrlOf(text, ["postgres:", "postgresql:"]) })),
      (value) => ["mirror", "--api-url=http://127.0.0.1:9", `--to=${value}`],
    ),
    mentions: /--to/,
    setting: "SUBDATA_API_KEY",
  },
  {
    name: "mirror --schema",
    cases: at(
      fc
        .oneof(nasty, fc.stringMatching(/^[a-z_][a-z0-9_]{0,62}$/), fc.stringMatching(/^[A-Za-z0-9_$."-]{0,70}$/))
        .map((text) => ({ value: text, valid: /^[a-z_][a-z0-9_]{0,62}$/.test(text) })),
      (value) => ["mirror", "--api-url=http://127.0.0.1:9", "--to=postgres://me@127.0.0.1:9/copy", `--schema=${value}`],
    ),
    mentions: /--schema/,
    setting: "SUBDATA_API_KEY",
  },
  {
    name: "mirror --api-key-env",
    cases: at(
      fc
        .oneof(nasty, fc.stringMatching(/^SUBDATA_[A-Z0-9_]{0,20}$/), fc.stringMatching(/^[A-Za-z0-9_ =$-]{0,20}$/))
        .map((text) => ({ value: text, valid: /^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(text) })),
      (value) => ["mirror", "--api-url=http://127.0.0.1:9", "--to=postgres://me@127.0.0.1:9/copy", `--api-key-env=${value}`],
    ),
    mentions: /--api-key-env/,
    // The variable it names, which is not set.
    setting: " is not set: put the API key",
  },
  // Ids, names and URLs are the services' to judge: the CLI itself refuses only NUL.
  {
    name: "an option passed on to a service",
    cases: at(anyText, (value) => ["webhooks", "test", `--merchant=${value}`, "--", "we_x"]),
    mentions: /--merchant/,
    setting: "SUBDATA_CLI_TOKEN",
  },
  {
    name: "an argument passed on to a service",
    cases: at(anyText, (value) => ["keys", "revoke", "--merchant=mer_x", "--", value]),
    mentions: /KEY_ID/,
    setting: "SUBDATA_CLI_TOKEN",
  },
];

/** A command and valid values for each of its inputs; one at a time is replaced by hostile text. */
interface CommandCase {
  path: readonly string[];
  positionals?: ReadonlyArray<{ name: string; value: () => string; mentions: RegExp }>;
  options?: Readonly<Record<string, { value: () => string; mentions: RegExp }>>;
  /** Which settings the command reads: the auth, webhook or console service, or the database. */
  uses: "auth" | "webhook" | "console" | "database";
  /** Whether the command writes, so a refusal must leave the rows as they were. */
  writes: boolean;
}

describe("hostile arguments and options at the subdata CLI", () => {
  let db: pg.Pool;
  let auth: AuthHarness;
  let webhook: RunningWebhookServer;
  let consoleServer: RunningConsoleServer;
  let cwd = "";
  let merchantId = "";
  let subscriptionId = "";
  // One charge or order per command, so that one command's runs cannot stop another's valid values
  // from working (a refunded charge takes no more refunds; a deleted one takes nothing).
  let chargeId = "";
  let refundChargeId = "";
  let deleteChargeId = "";
  let orderId = "";
  let deleteOrderId = "";
  let apiKeyId = "";
  let endpointId = "";
  const freshMerchant = () => `mer_clifuzz_${randomBytes(6).toString("hex")}`;

  const envFor = (uses: CommandCase["uses"]): Record<string, string> =>
    uses === "auth"
      ? { SUBDATA_AUTH_URL: auth.baseUrl, SUBDATA_CLI_TOKEN: auth.tokens.cli }
      : uses === "webhook"
        ? { SUBDATA_WEBHOOK_URL: webhook.baseUrl, SUBDATA_CLI_TOKEN: webhook.tokens.cli }
        : uses === "console"
          ? { SUBDATA_CONSOLE_URL: consoleServer.baseUrl, SUBDATA_CLI_TOKEN: consoleServer.tokens.cli }
          : { DATABASE_URL: inject("adminDatabaseUrl") };

  const merchant = { value: () => merchantId, mentions: /merchant/ };
  // A wrong merchant makes its objects invisible: "endpoint not found", exactly like an unknown id.
  const merchantOfObject = { value: () => merchantId, mentions: /merchant|(endpoint|api key) not found/ };
  const endpoint = { name: "endpoint-id", value: () => endpointId, mentions: /ENDPOINT_ID|endpoint/ };

  const commands: readonly CommandCase[] = [
    {
      path: ["seed"],
      options: {
        merchant: { value: freshMerchant, mentions: /--merchant/ },
        subscriptions: { value: () => "1", mentions: /--subscriptions/ },
        seed: { value: () => "hostile", mentions: /--seed/ },
        now: { value: () => "2025-06-01T12:00:00Z", mentions: /--now/ },
        name: { value: () => "Hostile Co", mentions: /--name/ },
        "batch-size": { value: () => "5000", mentions: /--batch-size/ },
      },
      uses: "database",
      writes: true,
    },
    {
      path: ["subscriptions", "set-status"],
      positionals: [
        { name: "subscription-id", value: () => subscriptionId, mentions: /SUBSCRIPTION_ID|subscription/ },
        { name: "status", value: () => "CANCELLED", mentions: /STATUS/ },
      ],
      options: { reason: { value: () => "too_expensive", mentions: /--reason/ } },
      uses: "database",
      writes: true,
    },
    {
      path: ["charges", "set-status"],
      positionals: [
        { name: "charge-id", value: () => chargeId, mentions: /CHARGE_ID|charge/ },
        { name: "status", value: () => "FAILED", mentions: /STATUS/ },
      ],
      options: {
        "failure-code": { value: () => "card_declined", mentions: /--failure-code/ },
        "failure-message": { value: () => "Your card was declined.", mentions: /--failure-message/ },
      },
      uses: "database",
      writes: true,
    },
    {
      path: ["charges", "refund"],
      positionals: [{ name: "charge-id", value: () => refundChargeId, mentions: /CHARGE_ID|charge/ }],
      options: { amount: { value: () => "0.01", mentions: /--amount/ } },
      uses: "database",
      writes: true,
    },
    {
      path: ["charges", "delete"],
      positionals: [{ name: "charge-id", value: () => deleteChargeId, mentions: /CHARGE_ID|charge/ }],
      uses: "database",
      writes: true,
    },
    {
      path: ["orders", "set-status"],
      positionals: [
        { name: "order-id", value: () => orderId, mentions: /ORDER_ID|order/ },
        { name: "status", value: () => "FULFILLED", mentions: /STATUS/ },
      ],
      uses: "database",
      writes: true,
    },
    {
      path: ["orders", "add-line-item"],
      positionals: [{ name: "order-id", value: () => orderId, mentions: /ORDER_ID|order/ }],
      options: {
        sku: { value: () => "SKU-FUZZ", mentions: /--sku/ },
        title: { value: () => "Fuzzed item", mentions: /--title/ },
        quantity: { value: () => "2", mentions: /--quantity/ },
        "unit-price": { value: () => "1.50", mentions: /--unit-price/ },
      },
      uses: "database",
      writes: true,
    },
    { path: ["orders", "delete"], positionals: [{ name: "order-id", value: () => deleteOrderId, mentions: /ORDER_ID|order/ }], uses: "database", writes: true },
    {
      path: ["keys", "create"],
      options: {
        merchant,
        name: { value: () => "hostile sync", mentions: /\bname\b/ },
        "expires-in": { value: () => "30d", mentions: /--expires-in|expires_at/ },
      },
      uses: "auth",
      writes: true,
    },
    { path: ["keys", "list"], options: { merchant }, uses: "auth", writes: false },
    { path: ["completion"], positionals: [{ name: "shell", value: () => "bash", mentions: /'shell'/ }], uses: "database", writes: false },
    {
      path: ["keys", "revoke"],
      positionals: [{ name: "key-id", value: () => apiKeyId, mentions: /KEY_ID|api_key_id|api key/ }],
      options: { merchant: merchantOfObject },
      uses: "auth",
      writes: true,
    },
    {
      path: ["console", "open"],
      options: {
        merchant,
        user: { value: () => "usr_42", mentions: /--user\b|user_id/ },
        "user-name": { value: () => "Ada Lovelace", mentions: /--user-name|user_name/ },
        ttl: { value: () => "30m", mentions: /--ttl/ },
      },
      uses: "console",
      writes: true,
    },
    {
      path: ["audit", "list"],
      options: {
        merchant,
        key: { value: () => apiKeyId, mentions: /--key|api_key_id/ },
        route: { value: () => "/v1/subscriptions", mentions: /--route|\broute\b/ },
        status: { value: () => "4xx", mentions: /--status/ },
        since: { value: () => "2026-10-01", mentions: /--since|start_time/ },
        until: { value: () => "2026-11-01", mentions: /--until|end_time/ },
        limit: { value: () => "50", mentions: /--limit/ },
      },
      uses: "auth",
      writes: false,
    },
    {
      path: ["webhooks", "create"],
      options: {
        merchant,
        url: { value: () => "http://127.0.0.1:9/hooks", mentions: /\burl\b/ },
        events: { value: () => "subscription.created,subscription.deleted", mentions: /--events|event_types/ },
        description: { value: () => "hostile", mentions: /description/ },
      },
      uses: "webhook",
      writes: true,
    },
    { path: ["webhooks", "list"], options: { merchant }, uses: "webhook", writes: false },
    {
      path: ["webhooks", "rotate-secret"],
      positionals: [endpoint],
      options: { merchant: merchantOfObject, grace: { value: () => "1h", mentions: /--grace|grace_period/ } },
      uses: "webhook",
      writes: true,
    },
    { path: ["webhooks", "delete"], positionals: [endpoint], options: { merchant: merchantOfObject }, uses: "webhook", writes: true },
    {
      path: ["webhooks", "deliveries"],
      positionals: [endpoint],
      options: { merchant: merchantOfObject, status: { value: () => "PENDING", mentions: /--status/ }, limit: { value: () => "20", mentions: /--limit/ } },
      uses: "webhook",
      writes: false,
    },
    {
      path: ["webhooks", "replay"],
      positionals: [endpoint],
      options: {
        merchant: merchantOfObject,
        since: { value: () => "2h", mentions: /--since|--until|start_time|end_time/ },
        until: { value: () => "1h", mentions: /--since|--until|start_time|end_time/ },
      },
      uses: "webhook",
      writes: true,
    },
    { path: ["webhooks", "test"], positionals: [endpoint], options: { merchant: merchantOfObject }, uses: "webhook", writes: true },
  ];

  /** Every input of every command, as (command, input) pairs to draw from. */
  const slots = commands.flatMap((command) => [
    ...(command.positionals ?? []).map((positional, index) => ({ command, slot: { kind: "positional" as const, index, mentions: positional.mentions } })),
    ...Object.entries(command.options ?? {}).map(([name, option]) => ({ command, slot: { kind: "option" as const, name, mentions: option.mentions } })),
  ]);

  /**
   * The command line with valid values everywhere but `replaced`; option values as --name=value and
   * positionals after "--", so the hostile text reaches the command as it is whatever it starts with.
   */
  function commandLine(
    command: CommandCase,
    replaced: { kind: "positional"; index: number } | { kind: "option"; name: string } | undefined,
    value: string,
    flags: readonly string[] = [],
  ): string[] {
    const options = Object.entries(command.options ?? {}).map(
      ([name, option]) => `--${name}=${replaced?.kind === "option" && replaced.name === name ? value : option.value()}`,
    );
    const positionals = (command.positionals ?? []).map((positional, index) =>
      replaced?.kind === "positional" && replaced.index === index ? value : positional.value(),
    );
    return [...command.path, ...options, ...flags, "--", ...positionals];
  }

  /** Every row the CLI could have written for these merchants, as text. */
  async function rowsOf(merchantIds: readonly string[]): Promise<string> {
    const ids = [...new Set([merchantId, ...merchantIds])].filter((id) => !id.includes("\u0000"));
    const tables = [
      "plans",
      "customers",
      "subscriptions",
      "charges",
      "orders",
      "order_line_items",
      "api_keys",
      "webhook_endpoints",
      "webhook_events",
      "webhook_deliveries",
      "portal_sessions",
    ];
    const { rows } = await db.query<{ rows: string }>(
      `SELECT concat_ws('|', (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM merchants t WHERE id = ANY($1)),
         ${tables.map((table) => `(SELECT string_agg(t::text, ',' ORDER BY t::text) FROM ${table} t WHERE merchant_id = ANY($1))`).join(",\n")}) AS rows`,
      [ids],
    );
    return rows[0]!.rows;
  }

  beforeAll(async () => {
    db = adminPool();
    cwd = emptyDirectory();
    [auth, webhook, consoleServer] = await Promise.all([startAuthService(), startWebhookServer({ allowPrivate: true }), startConsoleServer()]);
    const fixtures = fixturesOf(db);
    merchantId = await fixtures.merchant();
    subscriptionId = (await fixtures.subscription({ merchantId })).id;
    chargeId = await fixtures.charge({ merchantId, subscriptionId });
    // KWD has three decimals; ten billion dinars leave room for every refund the runs make.
    refundChargeId = await fixtures.charge({ merchantId, subscriptionId, currency: "KWD", amountMinor: 10n ** 13n });
    deleteChargeId = await fixtures.charge({ merchantId, subscriptionId });
    orderId = (await fixtures.order({ merchantId, subscriptionId })).id;
    deleteOrderId = (await fixtures.order({ merchantId, subscriptionId, lineItems: [{}, {}] })).id;
    apiKeyId = (await auth.apiKeys.createApiKey({ merchantId, name: "fixture" })).apiKey!.id;
    endpointId = (await webhook.endpoints.createEndpoint({ merchantId, url: "http://127.0.0.1:9/fixture" })).endpoint!.id;
  });

  afterAll(async () => {
    await auth?.close();
    await consoleServer?.close();
    await webhook?.stop();
    await db?.end();
  });

  it("covers every input of every command the CLI registers", () => {
    const program = new Command();
    const context = {
      setting: () => undefined,
      requireSetting: () => "",
      output: { result: () => {}, info: () => {}, progress: () => ({ update: () => {}, stop: () => {} }) },
      stdout: new PassThrough(),
      signal: new AbortController().signal,
    };
    for (const register of commandModules) register(program, context);
    const leaves = (command: Command, path: string[]): Array<{ path: string; inputs: string[] }> =>
      command.commands.length === 0
        ? [
            {
              path: path.join(" "),
              inputs: [
                ...command.registeredArguments.map((argument) => `<${argument.name()}>`),
                ...command.options.filter((option) => !option.negate && !option.isBoolean()).map((option) => option.long!),
              ],
            },
          ]
        : command.commands.flatMap((child) => leaves(child, [...path, child.name()]));
    // migrate takes no input; reencrypt-secrets' only input and all of mirror's are checked before any other, in the test on
    // local validation (a valid mirror line would copy through a real API); so are audit export's (it reads every
    // merchant's rows and writes a file) and maintain's (with --every it runs until stopped).
    const checkedLocally = ["migrate", "webhooks reencrypt-secrets", "mirror", "audit export", "maintain"];
    const registered = program.commands.flatMap((child) => leaves(child, [child.name()])).filter((leaf) => !checkedLocally.includes(leaf.path));
    const covered = commands.map((command) => ({
      path: command.path.join(" "),
      inputs: [...(command.positionals ?? []).map((positional) => `<${positional.name}>`), ...Object.keys(command.options ?? {}).map((name) => `--${name}`)],
    }));
    expect(covered.sort((a, b) => a.path.localeCompare(b.path))).toEqual(registered.sort((a, b) => a.path.localeCompare(b.path)));
  });

  it("hostile text in any one input: exit 0, or exit 1 naming that input, with no stack trace and nothing written", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...slots), nasty, fc.boolean(), async ({ command, slot }, value, json) => {
        const args = commandLine(command, slot, value, json ? ["--json"] : []);
        const context = JSON.stringify(args).slice(0, 400);
        const before = command.writes ? await rowsOf(args) : "";
        const run = await cli(args, envFor(command.uses), cwd);
        const error = expectCleanOutcome(run, json, context);
        if (error === undefined) return;
        if (json) expect(CALLER_ERRORS, `${context}: ${error.message}`).toContain(error.code);
        expect(error.message, context).toMatch(slot.mentions);
        if (command.writes) expect(await rowsOf(args), `${context} wrote rows`).toBe(before);
      }),
      { numRuns: RUNS },
    );
  });

  it("values that look like options, given the way people type them: a clean outcome, nothing written on a refusal", async () => {
    const dashed = fc.oneof(
      fc.constantFrom("-", "--", "-x", "-h", "--help", "--json", "--merchant", "--no-events", "--=x", "-1", "-\u001b[2J", "--a\nb"),
      nasty.map((text) => `-${text}`),
      nasty.map((text) => `--${text}`),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...slots), dashed, fc.boolean(), async ({ command, slot }, value, asJson) => {
        const options = Object.entries(command.options ?? {}).flatMap(([name, option]) => [
          `--${name}`,
          slot.kind === "option" && slot.name === name ? value : option.value(),
        ]);
        const positionals = (command.positionals ?? []).map((positional, index) =>
          slot.kind === "positional" && slot.index === index ? value : positional.value(),
        );
        // The flag goes before the positionals: after a "--" typed as one of them it would be an argument.
        const args = [...command.path, ...(asJson ? ["--json"] : []), ...positionals, ...options];
        // --json is the global flag wherever it stands, even where an option's value was expected.
        const json = args.includes("--json");
        const context = JSON.stringify(args).slice(0, 400);
        const before = command.writes ? await rowsOf(args) : "";
        const run = await cli(args, envFor(command.uses), cwd);
        const error = expectCleanOutcome(run, json, context);
        if (error === undefined) return;
        if (json) expect(CALLER_ERRORS, `${context}: ${error.message}`).toContain(error.code);
        // Commander's usage errors quote what they refer to; the CLI's own name the input.
        expect(error.message, context).toMatch(
          error.code === "usage" || /^(unknown|option|too many|required|missing)/.test(error.message) ? /'[^']+'/ : slot.mentions,
        );
        if (command.writes) expect(await rowsOf(args), `${context} wrote rows`).toBe(before);
      }),
      { numRuns: RUNS },
    );
  });

  it("a word too many or an unknown option on any command, migrate included: a usage error quoting it", async () => {
    const extra = fc.oneof(
      nasty.filter((text) => !text.startsWith("-") && !text.includes("\u0000")).map((text) => ({ word: text, option: false })),
      fc
        .stringMatching(/^[a-z][a-z-]{0,20}$/)
        .filter((name) => !["merchant", "json", "help", "to", "follow", "resync", "schema"].some((known) => known.startsWith(name)))
        .map((name) => ({ word: `--${name}`, option: true })),
    );
    const leaves = [
      ...commands.map((command) => commandLine(command, undefined, "").filter((word) => word !== "--")),
      ["migrate"],
      ["webhooks", "reencrypt-secrets"],
      ["mirror", "--api-url=http://127.0.0.1:9", "--to=postgres://me@127.0.0.1:9/copy"],
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...leaves), extra, async (base, { word, option }) => {
        // Positionals of the base line stay in place; the extra word goes last.
        const args = ["--json", ...base, word];
        const run = await cli(args, {}, cwd);
        const error = expectCleanOutcome(run, true, JSON.stringify(args).slice(0, 400));
        expect(error?.code).toBe("usage");
        expect(error?.message).toMatch(option ? /^unknown option '--/ : /^too many arguments for '[a-z-]+'/);
      }),
      { numRuns: RUNS },
    );
  });

  it("no command, or a group without its subcommand: a usage error that says so", async () => {
    for (const args of [[], ["webhooks"], ["keys"], ["subscriptions"], ["charges"], ["orders"], ["audit"]]) {
      const asJson = await cli([...args, "--json"], {}, cwd);
      expect(asJson.code).toBe(1);
      expect(JSON.parse(asJson.stdout)).toEqual({ error: { code: "usage", message: "a command is required (run with --help to list them)" } });
      const asText = await cli(args, {}, cwd);
      expect(asText.code).toBe(1);
      expect(asText.stderr).toMatch(/^Usage: subdata/);
    }
  });

  it("valid values drawn at random do what they say", async () => {
    const json = <T>(run: Run, context: string): T => {
      expect(run, context).toMatchObject({ code: 0, stderr: "" });
      return JSON.parse(run.stdout) as T;
    };
    const noControl = (text: string) => !/[\u0000-\u001f\u007f]/.test(text);

    // Any status in any case; a CANCELLED one with any reason Postgres can store.
    await fc.assert(
      fc.asyncProperty(
        statusWords(SUBSCRIPTION_STATUSES).filter((word) => word.valid),
        fc.option(fc.string({ unit: "grapheme", maxLength: 30 }).filter((text) => !text.includes("\u0000"))),
        async ({ value: status }, reason) => {
          const withReason = status.toUpperCase() === "CANCELLED" && reason !== null;
          const args = ["subscriptions", "set-status", "--json", ...(withReason ? [`--reason=${reason}`] : []), "--", subscriptionId, status];
          json(await cli(args, envFor("database"), cwd), JSON.stringify(args));
          const row = (await db.query("SELECT status::text, cancellation_reason FROM subscriptions WHERE id = $1", [subscriptionId])).rows[0];
          expect(row.status).toBe(status.toUpperCase());
          if (withReason) expect(row.cancellation_reason).toBe(reason);
        },
      ),
      { numRuns: 15 },
    );

    // Any status a charge can be set to, in any case; FAILED with a code and message of its own, a catalog code alone, or neither.
    await fc.assert(
      fc.asyncProperty(
        statusWords(CHARGE_STATUSES).filter((word) => word.valid),
        fc
          .oneof(
            fc.constant({}),
            fc.constantFrom(...FAILURE_CODES).map((code) => ({ code })),
            fc.record({
              code: fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }),
              message: fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }),
            }),
          )
          .filter((failure) => !Object.values(failure).some((text) => text.includes("\u0000"))),
        async ({ value: status }, failure: { code?: string; message?: string }) => {
          const failed = status.toUpperCase() === "FAILED";
          const options = failed
            ? [
                ...(failure.code === undefined ? [] : [`--failure-code=${failure.code}`]),
                ...(failure.message === undefined ? [] : [`--failure-message=${failure.message}`]),
              ]
            : [];
          const args = ["charges", "set-status", "--json", ...options, "--", chargeId, status];
          json(await cli(args, envFor("database"), cwd), JSON.stringify(args));
          const row = (
            await db.query(
              "SELECT status::text, failure_code, failure_message, amount_refunded_minor = amount_minor AS all_refunded FROM charges WHERE id = $1",
              [chargeId],
            )
          ).rows[0];
          expect(row.status).toBe(status.toUpperCase());
          expect(row.all_refunded).toBe(status.toUpperCase() === "REFUNDED");
          if (!failed) expect([row.failure_code, row.failure_message]).toEqual([null, null]);
          else if (failure.code !== undefined)
            expect([row.failure_code, row.failure_message]).toEqual([
              asUtf8(failure.code),
              failure.message === undefined ? expect.any(String) : asUtf8(failure.message),
            ]);
          else expect([row.failure_code, row.failure_message]).toEqual([expect.any(String), expect.any(String)]);
        },
      ),
      { numRuns: 15 },
    );

    // Any refund of up to ten dinars, with or without trailing zeros: exactly that much more is refunded.
    await fc.assert(
      fc.asyncProperty(fc.bigInt({ min: 1n, max: 10_000n }), fc.integer({ min: 0, max: 3 }), async (fils, zeros) => {
        const amount = `${fils / 1_000n}.${String(fils % 1_000n).padStart(3, "0")}${"0".repeat(zeros)}`;
        const refunded = async () => BigInt((await db.query("SELECT amount_refunded_minor::text AS r FROM charges WHERE id = $1", [refundChargeId])).rows[0].r);
        const before = await refunded();
        const args = ["charges", "refund", `--amount=${amount}`, "--json", "--", refundChargeId];
        expect(json<{ status: string }>(await cli(args, envFor("database"), cwd), amount).status).toBe("PARTIALLY_REFUNDED");
        expect((await refunded()) - before).toBe(fils);
      }),
      { numRuns: 10 },
    );

    // Any order status in any case.
    await fc.assert(
      fc.asyncProperty(
        statusWords(ORDER_STATUSES).filter((word) => word.valid),
        async ({ value: status }) => {
          json(await cli(["orders", "set-status", "--json", "--", orderId, status], envFor("database"), cwd), status);
          expect((await db.query("SELECT status::text FROM orders WHERE id = $1", [orderId])).rows[0].status).toBe(status.toUpperCase());
        },
      ),
      { numRuns: 10 },
    );

    // Any SKU and title, any quantity and price: the item as given, and the order still adds up.
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 }).filter((text) => !text.includes("\u0000")),
        fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 }).filter((text) => !text.includes("\u0000")),
        fc.integer({ min: 1, max: 1_000 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        async (sku, title, quantity, cents) => {
          const price = `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}`;
          const args = [
            "orders",
            "add-line-item",
            `--sku=${sku}`,
            `--title=${title}`,
            `--quantity=${quantity}`,
            `--unit-price=${price}`,
            "--json",
            "--",
            orderId,
          ];
          const added = json<{ lineItem: { position: number } }>(await cli(args, envFor("database"), cwd), JSON.stringify(args));
          const item = (
            await db.query("SELECT sku, title, quantity, unit_price_minor::int AS price FROM order_line_items WHERE order_id = $1 AND position = $2", [
              orderId,
              added.lineItem.position,
            ])
          ).rows[0];
          expect(item).toEqual({ sku: asUtf8(sku), title: asUtf8(title), quantity, price: cents });
          const sums = (
            await db.query(
              `SELECT o.subtotal_minor = (SELECT sum(total_minor) FROM order_line_items WHERE order_id = o.id) AS subtotal_adds_up,
                      o.total_minor = o.subtotal_minor - o.discount_minor + o.shipping_minor + o.tax_minor AS total_adds_up
                 FROM orders o WHERE o.id = $1`,
              [orderId],
            )
          ).rows[0];
          expect(sums).toEqual({ subtotal_adds_up: true, total_adds_up: true });
        },
      ),
      { numRuns: 10 },
    );

    // Any name the auth service takes, any expiry up to the cap.
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: "grapheme", maxLength: 40 }).filter(noControl),
        // At least a minute: a key that expires within the call (1s under a loaded CI machine) is
        // refused by the service, rightly, and would fail this property for the wrong reason.
        expiresIn.filter((duration) => {
          const [, amount, unit] = /^(\d+)([smhdw])$/.exec(duration.value) ?? [];
          return duration.valid && Number(amount) * (DURATION_MS[unit!] ?? 0) >= 60_000;
        }),
        async (name, { value: duration }) => {
          const args = ["keys", "create", `--merchant=${merchantId}`, `--name=${name}`, `--expires-in=${duration}`, "--json"];
          const created = json<{ api_key: { name: string; expires_at: string } }>(await cli(args, envFor("auth"), cwd), JSON.stringify(args));
          expect(created.api_key.name).toBe(name);
          const [, amount, unit] = /^(\d+)([smhdw])$/.exec(duration)!;
          expect(Math.abs(Date.parse(created.api_key.expires_at) - Date.now() - Number(amount) * DURATION_MS[unit!]!)).toBeLessThan(60_000);
        },
      ),
      { numRuns: 15 },
    );

    // Any subset of event types in any order, any description without NUL.
    await fc.assert(
      fc.asyncProperty(
        fc.shuffledSubarray(EVENT_NAMES),
        fc.string({ unit: "grapheme", maxLength: 40 }).filter((text) => !text.includes("\u0000")),
        async (events, description) => {
          const args = [
            "webhooks",
            "create",
            `--merchant=${merchantId}`,
            "--url=http://127.0.0.1:9/valid",
            `--events=${events.join(", ")}`,
            `--description=${description}`,
            "--json",
          ];
          const created = json<{ endpoint: { event_types: string[]; description: string } }>(await cli(args, envFor("webhook"), cwd), JSON.stringify(args));
          expect(created.endpoint).toMatchObject({ event_types: events, description });
        },
      ),
      { numRuns: 10 },
    );

    // Listing and replaying with any valid filter, limit and range.
    await fc.assert(
      fc.asyncProperty(
        statusWords(DELIVERY_STATUSES).filter((word) => word.valid),
        wholeNumbers(1, 1_000).filter((limit) => limit.valid),
        fc.integer({ min: 1, max: 744 }),
        async ({ value: status }, { value: limit }, hours) => {
          const env = envFor("webhook");
          json(
            await cli(["webhooks", "deliveries", endpointId, `--merchant=${merchantId}`, `--status=${status}`, `--limit=${limit}`, "--json"], env, cwd),
            status,
          );
          const replayed = json<{ scheduled_count: number }>(
            await cli(["webhooks", "replay", endpointId, `--merchant=${merchantId}`, `--since=${hours}h`, "--json"], env, cwd),
            `${hours}h`,
          );
          expect(replayed.scheduled_count).toBe(0);
        },
      ),
      { numRuns: 10 },
    );

    // A new merchant with any name and seed, at any moment the generator supports.
    await fc.assert(
      fc.asyncProperty(
        anyText.filter((text) => text.valid),
        anyText.filter((text) => text.valid),
        seedNow.filter((now) => now.valid),
        async (name, seed, now) => {
          const merchant = freshMerchant();
          const args = ["seed", `--merchant=${merchant}`, "--subscriptions=2", `--name=${name.value}`, `--seed=${seed.value}`, `--now=${now.value}`, "--json"];
          const seeded = json<{ counts: { subscriptions: number } }>(await cli(args, envFor("database"), cwd), JSON.stringify(args).slice(0, 300));
          expect(seeded.counts.subscriptions).toBe(2);
          expect((await db.query("SELECT name FROM merchants WHERE id = $1", [merchant])).rows).toEqual([{ name: asUtf8(name.value) }]);
        },
      ),
      { numRuns: 5 },
    );
  });

  it("the real binary, a few times: hostile values give success or a one-line error naming the input, and no stack trace", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...slots),
        // A process's arguments can hold neither NUL nor half a surrogate pair.
        nasty.filter((text) => !text.includes("\u0000") && asUtf8(text) === text),
        async ({ command, slot }, value) => {
          const args = commandLine(command, slot, value);
          const context = JSON.stringify(args).slice(0, 400);
          const before = command.writes ? await rowsOf(args) : "";
          const run = await spawnCli(args, { env: envFor(command.uses) });
          const error = expectCleanOutcome(run, false, context);
          if (error === undefined) return;
          expect(error.message, context).toMatch(slot.mentions);
          if (command.writes) expect(await rowsOf(args), `${context} wrote rows`).toBe(before);
        },
      ),
      { numRuns: 4 },
    );
  });

  it("every command with valid values succeeds (delete and revoke last, on their fixtures)", async () => {
    const ordered = [...commands].sort((a, b) => Number(["delete", "revoke"].includes(a.path[1]!)) - Number(["delete", "revoke"].includes(b.path[1]!)));
    for (const command of ordered) {
      const args = commandLine(command, undefined, "", ["--json"]);
      const run = await cli(args, envFor(command.uses), cwd);
      expect(run, JSON.stringify(args)).toMatchObject({ code: 0, stderr: "" });
      expect(() => JSON.parse(run.stdout)).not.toThrow();
    }
    expect((await db.query("SELECT 1 FROM webhook_endpoints WHERE id = $1", [endpointId])).rowCount).toBe(0);
    expect((await db.query("SELECT 1 FROM charges WHERE id = $1", [deleteChargeId])).rowCount).toBe(0);
    expect((await db.query("SELECT 1 FROM orders WHERE id = $1", [deleteOrderId])).rowCount).toBe(0);
    expect((await db.query("SELECT revoked_at FROM api_keys WHERE id = $1", [apiKeyId])).rows[0].revoked_at).toBeInstanceOf(Date);
  });

  it("refuses, naming the input, what used to crash or slip through to the services", async () => {
    const refused: Array<[args: string[], mentions: RegExp]> = [
      [["webhooks", "deliveries", "we_x", "--merchant", "mer_x", "--status", "1"], /^--status must be one of/],
      [["webhooks", "deliveries", "we_x", "--merchant", "mer_x", "--status", "0"], /^--status must be one of/],
      [["webhooks", "deliveries", "we_x", "--merchant", "mer_x", "--limit", "0x10"], /^--limit must be a whole number/],
      [["webhooks", "deliveries", "we_x", "--merchant", "mer_x", "--limit", "1e2"], /^--limit must be a whole number/],
      [["webhooks", "create", "--merchant", "mer_x", "--url", "https://example.com/", "--events", "__proto__"], /^--events takes/],
      [["webhooks", "create", "--merchant", "mer_x", "--url", "https://example.com/", "--events", "subscription.created,toString"], /^--events takes/],
      [["keys", "create", "--merchant", "mer_x", "--expires-in", "999999w"], /^--expires-in must be at most 36500d \(about 100 years;/],
      [["webhooks", "rotate-secret", "we_x", "--merchant", "mer_x", "--grace", "8d"], /^--grace must be at most 7d,/],
      [["webhooks", "rotate-secret", "we_x", "--merchant", "mer_x", "--grace", " 24h"], /^--grace must be a whole number with a unit/],
      [
        ["seed", "--merchant", "mer_x", "--subscriptions", "1", "--now", "9999-12-31T00:00:00Z"],
        /^--now must be from 1970-01-01T00:00:00Z and before 2250-01-01T00:00:00Z/,
      ],
      [["seed", "--merchant", "mer_x", "--subscriptions", "1", "--now", "2026-02-30T00:00:00Z"], /^--now must be an RFC 3339 time/],
      // Like --since: no offset, hour 24 or a space around it is refused, not read as UTC or trimmed.
      [["seed", "--merchant", "mer_x", "--subscriptions", "1", "--now", "2026-02-01T00:00:00"], /^--now must be an RFC 3339 time with an offset/],
      [["seed", "--merchant", "mer_x", "--subscriptions", "1", "--now", "2026-02-01T24:00:00Z"], /^--now must be an RFC 3339 time with an offset/],
      [["seed", "--merchant", "mer_x", "--subscriptions", "1", "--now", "2026-02-01T00:00:00Z "], /^--now must be an RFC 3339 time with an offset/],
      [["seed", "--merchant", "mer_x", "--subscriptions", "1", "--name", "a\u0000b"], /^--name must not contain a NUL/],
      [["webhooks", "replay", "we_x", "--merchant", "mer_x", "--since", "9999999d", "--until", "9999998d"], /^--since must be/],
      [["webhooks", "replay", "we_x", "--merchant", "mer_x", "--since", "2026-02-30T00:00:00Z"], /^--since must be/],
      // No offset (Date.parse would read the machine's local time) and hour 24 (the next day).
      [["webhooks", "replay", "we_x", "--merchant", "mer_x", "--since", "2026-02-01T00:00:00"], /^--since must be/],
      [["webhooks", "replay", "we_x", "--merchant", "mer_x", "--since", "2026-02-01T24:00:00Z"], /^--since must be/],
      [["subscriptions", "set-status", "sub_\u0000", "ACTIVE"], /^SUBSCRIPTION_ID must not contain a NUL/],
      [["charges", "set-status", "ch_\u0000", "FAILED"], /^CHARGE_ID must not contain a NUL/],
      [["charges", "set-status", "ch_x", "partially_refunded"], /^STATUS PARTIALLY_REFUNDED needs an amount: use subdata charges refund/],
      [
        ["charges", "set-status", "ch_x", "FAILED", "--failure-code", "do_not_honor"],
        /^--failure-code "do_not_honor" has no default message: give --failure-message too/,
      ],
      [["charges", "refund", "ch_x", "--amount", "1."], /^--amount must be a decimal amount/],
      [["charges", "refund", "ch_x", "--amount", "0.000"], /^--amount must be more than 0/],
      [["orders", "add-line-item", "ord_x", "--sku", "S", "--title", "T", "--quantity", "1", "--unit-price", "1e2"], /^--unit-price must be a decimal amount/],
      [["orders", "add-line-item", "ord_\u0000", "--sku", "S", "--title", "T", "--quantity", "1", "--unit-price", "1"], /^ORDER_ID must not contain a NUL/],
    ];
    for (const [args, mentions] of refused) {
      const run = await cli(["--json", ...args], {}, cwd);
      expect(run.code, args.join(" ")).toBe(1);
      expect(JSON.parse(run.stdout).error, args.join(" ")).toEqual({ code: "invalid_argument", message: expect.stringMatching(mentions) });
    }
    // In text, what was typed is echoed with its control characters escaped, on one line.
    const escaped = await cli(["seed", "--merchant", "mer_\u001b[2J\r\n\u009b", "--subscriptions", "1"], {}, cwd);
    expect(escaped.stderr).toBe('error: --merchant must be mer_ followed by 1–64 letters, digits or underscores, got "mer_\\u001b[2J\\r\\n\\u009b"\n');
    // Commander's "(Did you mean …?)" hint keeps its own line; the same words typed are escaped like any others.
    const hinted = await cli(["sed"], {}, cwd);
    expect(hinted.stderr).toBe("error: unknown command 'sed'\n(Did you mean seed?)\n(run with --help for usage)\n");
    const typed = await cli(["sed\n(Did you mean seed?)"], {}, cwd);
    expect(typed.stderr).toBe("error: unknown command 'sed\\n(Did you mean seed?)'\n(run with --help for usage)\n");
  });
});

describe("inputs the CLI checks itself, with no settings at all", () => {
  const cwd = emptyDirectory();

  it("a valid value gets as far as the first setting the command needs; an invalid one is refused naming its input", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...LOCAL_CHECKS).chain((check) => fc.tuple(fc.constant(check), check.cases)),
        fc.boolean(),
        async ([check, { args, valid }], json) => {
          const context = `${check.name}: ${JSON.stringify(args).slice(0, 300)} (${valid ? "valid" : "invalid"})`;
          const run = await cli(json ? ["--json", ...args] : args, {}, cwd);
          const error = expectCleanOutcome(run, json, context);
          expect(error, context).toBeDefined();
          if (valid) {
            if (json) expect(error!.code, `${context}: ${error!.message}`).toBe("config");
            expect(error!.message, context).toContain(check.setting);
          } else {
            if (json) expect(error!.code, `${context}: ${error!.message}`).toBe("invalid_argument");
            expect(error!.message, context).toMatch(check.mentions);
          }
        },
      ),
      { numRuns: 3 * RUNS },
    );
  });
});
