import { describe, expect, it } from "vitest";
import { parseOptions } from "./options.ts";

describe("parseOptions --scenarios", () => {
  it("takes a comma-separated list and implies no webhook phase", () => {
    const options = parseOptions(["--quick", "--scenarios", "list50, get"], {});
    expect(options.scenarios).toEqual(["list50", "get"]);
    expect(options.skipWebhooks).toBe(true);
    expect(options.mode).toBe("quick");
  });

  it("leaves every scenario and the webhook phase when absent", () => {
    const options = parseOptions([], {});
    expect(options.scenarios).toBeUndefined();
    expect(options.skipWebhooks).toBe(false);
  });

  it("refuses an empty list and combinations that would measure something else", () => {
    expect(() => parseOptions(["--scenarios", ","], {})).toThrow(/comma-separated/);
    expect(() => parseOptions(["--scenarios"], {})).toThrow(/comma-separated/);
    expect(() => parseOptions(["--scenarios", "list50", "--webhooks-only"], {})).toThrow(/excludes/);
    expect(() => parseOptions(["--scenarios", "list50", "--profile", "list50"], {})).toThrow(/excludes/);
  });
});

describe("parseOptions --lifecycle", () => {
  it("runs the lifecycle bench over 10,000,000 audit rows on the smoke dataset unless told otherwise", () => {
    const options = parseOptions(["--lifecycle"], {});
    expect(options.lifecycleAuditRows).toBe(10_000_000);
    expect([options.subscriptions, options.merchants]).toEqual([2_000, 4]);
    expect(parseOptions(["--lifecycle", "--audit-rows", "2000000", "--subscriptions", "100000"], {})).toMatchObject({
      lifecycleAuditRows: 2_000_000,
      subscriptions: 100_000,
    });
    expect(parseOptions([], {}).lifecycleAuditRows).toBeUndefined();
  });

  it("refuses --audit-rows alone and a lifecycle run mixed with the other modes", () => {
    expect(() => parseOptions(["--audit-rows", "5"], {})).toThrow(/goes with --lifecycle/);
    expect(() => parseOptions(["--lifecycle", "--webhooks-only"], {})).toThrow(/excludes/);
    expect(() => parseOptions(["--lifecycle", "--scenarios", "list50"], {})).toThrow(/excludes/);
    expect(() => parseOptions(["--lifecycle", "--feed"], {})).toThrow(/excludes/);
  });
});

describe("parseOptions --mix", () => {
  it("takes one of the three tenant mixes, the skewed hundred by default", () => {
    expect(parseOptions([], {}).mix).toBe("skewed");
    expect(parseOptions(["--quick", "--mix", "dominant"], {}).mix).toBe("dominant");
    expect(parseOptions(["--mix", "small"], {}).mix).toBe("small");
    expect(() => parseOptions(["--mix", "huge"], {})).toThrow(/skewed, dominant or small/);
  });
});

describe("parseOptions --tracing", () => {
  it("runs the tracing bench alone, with any scenarios and size, and refuses the other single-phase modes", () => {
    expect(parseOptions(["--smoke", "--tracing", "--scenarios", "get"], {})).toMatchObject({ tracingOnly: true, scenarios: ["get"], mode: "smoke" });
    expect(parseOptions([], {}).tracingOnly).toBe(false);
    for (const other of ["--feed", "--webhooks-only", "--lifecycle"]) expect(() => parseOptions(["--tracing", other], {})).toThrow(/--tracing excludes/);
  });
});
