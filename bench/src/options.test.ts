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

describe("parseOptions --mix", () => {
  it("takes one of the three tenant mixes, the skewed hundred by default", () => {
    expect(parseOptions([], {}).mix).toBe("skewed");
    expect(parseOptions(["--quick", "--mix", "dominant"], {}).mix).toBe("dominant");
    expect(parseOptions(["--mix", "small"], {}).mix).toBe("small");
    expect(() => parseOptions(["--mix", "huge"], {})).toThrow(/skewed, dominant or small/);
  });
});
