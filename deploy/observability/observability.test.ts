import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

/**
 * The dashboard and the alert rules are checked against the code and the runbooks: well-formed,
 * every alert links an anchor that exists in docs/runbooks.md, and every subdata_* metric they use is
 * one the code registers (a renamed metric would otherwise leave a silent, never-firing alert).
 */

const root = fileURLToPath(new URL("../../", import.meta.url));
const read = (path: string) => readFileSync(join(root, path), "utf8");

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const rules = (parse(read("deploy/observability/prometheus-rules.yaml")) as { groups: Array<{ name: string; rules: Rule[] }> }).groups;
const dashboard = JSON.parse(read("deploy/observability/grafana-dashboard.json")) as {
  uid: string;
  panels: Array<{ id: number; type: string; title: string; targets?: Array<{ expr: string }> }>;
};

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const line of markdown.split("\n")) {
    const heading = /^#{1,6}\s+(.+?)\s*$/.exec(line);
    if (heading)
      anchors.add(
        heading[1]!
          .toLowerCase()
          .replace(/[^\p{L}\p{N} _-]/gu, "")
          .replace(/ /g, "-"),
      );
  }
  return anchors;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(join(root, path)).isDirectory()) return entry === "node_modules" ? [] : sourceFiles(path);
    return path.endsWith(".ts") && !path.endsWith(".test.ts") ? [path] : [];
  });
}

/** Every `name: "subdata_…"` a Counter/Gauge/Histogram is registered with, anywhere in the services. */
const registeredMetrics = new Set(
  ["services", "gateway/src"]
    .flatMap((dir) => sourceFiles(dir))
    .flatMap((path) => [...read(path).matchAll(/name: "(subdata_[a-z_]+)"/g)].map((match) => match[1]!)),
);

function metricsUsedBy(expr: string): string[] {
  return [...expr.matchAll(/\b(subdata_[a-z_]+)/g)].map((match) => match[1]!.replace(/_(bucket|count|sum)$/, ""));
}

/** Every runbook_url is absolute, on one base: the runbooks page (components/prometheus-operator can replace it). */
const RUNBOOK_BASE = "https://github.com/subdata/subdata/blob/main/docs/runbooks.md";

function balanced(expr: string): boolean {
  const pairs: Record<string, string> = { ")": "(", "]": "[", "}": "{" };
  const stack: string[] = [];
  for (const char of expr.replace(/"(?:[^"\\]|\\.)*"/g, "")) {
    if ("([{".includes(char)) stack.push(char);
    else if (char in pairs && stack.pop() !== pairs[char]) return false;
  }
  return stack.length === 0;
}

describe("deploy/observability", () => {
  const alerts = rules.flatMap((group) => group.rules).filter((rule) => rule.alert);

  it("has well-formed alert rules with a severity, a summary and a runbook that exists", () => {
    const anchors = anchorsOf(read("docs/runbooks.md"));
    expect(alerts.length).toBeGreaterThanOrEqual(10);
    expect(new Set(alerts.map((rule) => rule.alert)).size).toBe(alerts.length);
    for (const rule of alerts) {
      expect(rule.alert).toMatch(/^Subdata[A-Za-z0-9]+$/);
      expect(balanced(rule.expr), `${rule.alert}: unbalanced expression`).toBe(true);
      expect(rule.for ?? "0m").toMatch(/^\d+[smh]$/);
      expect(["critical", "warning", "info"]).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, `${rule.alert}: summary`).toBeTruthy();
      const runbook = new RegExp(`^${RUNBOOK_BASE.replaceAll(".", "\\.")}#([a-z0-9-]+)$`).exec(rule.annotations?.runbook_url ?? "");
      expect(runbook, `${rule.alert}: runbook_url`).not.toBeNull();
      expect(anchors.has(runbook![1]!), `${rule.alert}: #${runbook![1]} is not a heading of docs/runbooks.md`).toBe(true);
    }
  });

  it("covers the alerts operations needs", () => {
    const names = alerts.map((rule) => rule.alert);
    for (const name of [
      "SubdataGatewayHigh5xxRate",
      "SubdataGatewayHighLatency",
      "SubdataOutboxLagHigh",
      "SubdataOutboxBacklogGrowing",
      "SubdataConsumerPendingGrowing",
      "SubdataWebhookFailureRate",
      "SubdataWebhookEndpointDisabled",
      "SubdataWebhookRefusedEvents",
      "SubdataAuditWriteFailures",
      "SubdataDbPoolSaturated",
      "SubdataProcessDown",
      "SubdataAuditPartitionsNotAhead",
      "SubdataRetentionNotRunning",
      "SubdataRowsPastRetention",
      "SubdataConsumerLostEvents",
    ]) {
      expect(names).toContain(name);
    }
  });

  it("uses only metrics the code registers, in rules and dashboard", () => {
    expect(registeredMetrics.size).toBeGreaterThan(10);
    const expressions = [
      ...alerts.map((rule) => ({ where: rule.alert!, expr: rule.expr })),
      ...dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ where: panel.title, expr: target.expr }))),
    ];
    for (const { where, expr } of expressions) {
      for (const metric of metricsUsedBy(expr)) expect(registeredMetrics.has(metric), `${where}: ${metric} is not registered anywhere`).toBe(true);
    }
  });

  it("has a dashboard whose panels all query something, with unique ids", () => {
    expect(dashboard.uid).toBe("subdata-overview");
    const ids = dashboard.panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of dashboard.panels.filter((p) => p.type !== "row")) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(balanced(target.expr), `${panel.title}: unbalanced`).toBe(true);
    }
    const used = new Set(dashboard.panels.flatMap((panel) => (panel.targets ?? []).flatMap((target) => metricsUsedBy(target.expr))));
    for (const metric of [
      "subdata_http_requests_total",
      "subdata_rpc_server_duration_seconds",
      "subdata_audit_batch_size",
      "subdata_outbox_oldest_pending_seconds",
      "subdata_jetstream_consumer_pending",
      "subdata_webhook_deliveries_total",
      "subdata_db_pool_connections",
    ]) {
      expect(used.has(metric), metric).toBe(true);
    }
  });
});
