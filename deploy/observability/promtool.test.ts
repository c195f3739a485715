import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { prometheusRulePath, prometheusRuleText, ruleFilePath } from "./prometheus-rule.ts";

/**
 * The alert rules under Prometheus's own tools: `promtool check rules`, and `promtool test rules` over
 * prometheus-rules.test.yaml, which must hold a firing and a quiet case for every alert. And the
 * PrometheusRule of components/prometheus-operator is the rule file, as `npm run generate:monitoring` writes it.
 */

const root = fileURLToPath(new URL("../../", import.meta.url));
const read = (path: string) => readFileSync(join(root, path), "utf8");
const testFilePath = "deploy/observability/prometheus-rules.test.yaml";
// promtool evaluates every rule at each simulated minute of every case (about 4 s of CPU); on a loaded
// host that takes longer than a unit test's default limit.
const PROMTOOL_TIMEOUT_MS = 120_000;

function promtool(...args: string[]): string {
  try {
    return execFileSync("promtool", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    const { code, stdout, stderr } = error as { code?: string; stdout?: string; stderr?: string };
    if (code === "ENOENT") throw new Error("promtool is not on PATH: install Debian's prometheus package (apt-get install --no-install-recommends prometheus)");
    throw new Error(`promtool ${args.join(" ")} failed:\n${stdout ?? ""}${stderr ?? ""}`);
  }
}

interface AlertCase {
  alertname: string;
  exp_alerts?: unknown[];
}

describe("deploy/observability/prometheus-rules.yaml under promtool", () => {
  it("passes promtool check rules", { timeout: PROMTOOL_TIMEOUT_MS }, () => {
    expect(promtool("check", "rules", ruleFilePath)).toMatch(/SUCCESS: \d+ rules found/);
  });

  it("passes its unit tests, which make every alert fire and stay quiet at least once", { timeout: PROMTOOL_TIMEOUT_MS }, () => {
    const alerts = (parse(read(ruleFilePath)) as { groups: Array<{ rules: Array<{ alert?: string }> }> }).groups
      .flatMap((group) => group.rules)
      .flatMap((rule) => (rule.alert ? [rule.alert] : []));
    const cases = (parse(read(testFilePath)) as { tests: Array<{ alert_rule_test?: AlertCase[] }> }).tests.flatMap((test) => test.alert_rule_test ?? []);
    expect(alerts.length).toBeGreaterThanOrEqual(10);
    for (const alert of alerts) {
      const mine = cases.filter((candidate) => candidate.alertname === alert);
      expect(
        mine.some((candidate) => (candidate.exp_alerts ?? []).length > 0),
        `${alert} fires in a test`,
      ).toBe(true);
      expect(
        mine.some((candidate) => (candidate.exp_alerts ?? []).length === 0),
        `${alert} stays quiet in a test`,
      ).toBe(true);
    }
    expect(cases.every((candidate) => alerts.includes(candidate.alertname))).toBe(true);
    expect(promtool("test", "rules", testFilePath)).toContain("SUCCESS");
  });
});

describe("the PrometheusRule of components/prometheus-operator", () => {
  it("is the rule file as npm run generate:monitoring writes it", () => {
    const committed = read(prometheusRulePath);
    expect(committed, "stale: run npm run generate:monitoring").toBe(prometheusRuleText(read(ruleFilePath)));
    expect((parse(committed) as { spec: unknown }).spec).toEqual(parse(read(ruleFilePath)));
  });
});
