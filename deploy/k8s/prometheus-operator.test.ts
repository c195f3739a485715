import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { IPodMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor";
import type { IPrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { selectorMatches } from "./test-support/label-selector.ts";
import { ofKind, overlayNames, renderOverlay, repositoryRoot } from "./test-support/render.ts";
import { workloadsOf } from "./test-support/workloads.ts";

type RuleGroups = Array<{ name: string; rules: Array<{ alert?: string; annotations?: Record<string, string> }> }>;

const read = (path: string) => readFileSync(join(repositoryRoot, path), "utf8");
const ruleFileGroups = (parse(read("deploy/observability/prometheus-rules.yaml")) as { groups: RuleGroups }).groups;
const settings = (parse(read("deploy/k8s/test-support/overlays/prod-monitoring/monitoring-settings.yaml")) as { data: { runbookBase: string } }).data;

describe("components/prometheus-operator, enabled as the prod-monitoring fixture overlay does", () => {
  const objects = renderOverlay("prod-monitoring");
  const workloads = workloadsOf(objects);
  const deployments = workloads.filter((workload) => workload.kind === "Deployment");

  it("carries the rule file's groups in one PrometheusRule, with the overlay's runbook base on every runbook_url", () => {
    const rules = ofKind<IPrometheusRule>(objects, "PrometheusRule");
    expect(rules.map((rule) => rule.metadata.name)).toEqual(["subdata"]);
    const expected = structuredClone(ruleFileGroups);
    for (const rule of expected.flatMap((group) => group.rules)) {
      const annotations = rule.annotations!;
      annotations.runbook_url = `${settings.runbookBase}#${annotations.runbook_url!.split("#")[1]}`;
    }
    expect(rules[0]!.spec?.groups).toEqual(expected);
    const urls = rules[0]!.spec!.groups!.flatMap((group) => (group.rules ?? []).map((rule) => rule.annotations?.runbook_url));
    expect(urls.length).toBe(ruleFileGroups.flatMap((group) => group.rules).length);
    for (const url of urls) expect(url).toMatch(new RegExp(`^${settings.runbookBase.replaceAll(".", "\\.")}#[a-z0-9-]+$`));
  });

  it("scrapes every long-lived process's /metrics through a PodMonitor, as job subdata-<component>", () => {
    const monitors = ofKind<IPodMonitor>(objects, "PodMonitor");
    expect(monitors.map((monitor) => monitor.metadata.name)).toEqual(["subdata"]);
    const spec = monitors[0]!.spec!;
    expect(deployments).toHaveLength(6);
    for (const workload of deployments) {
      expect(selectorMatches(spec.selector, workload.podLabels), workload.name).toBe(true);
      // The port the prometheus.io annotations announce is one the monitor scrapes, by name.
      const template = (workload.object.spec as { template: { metadata: { annotations: Record<string, string> } } }).template;
      const announced = Number(template.metadata.annotations["prometheus.io/port"]);
      const portName = workload.containers.flatMap((container) => container.ports ?? []).find((port) => port.containerPort === announced)?.name;
      const endpoint = spec.podMetricsEndpoints?.find((candidate) => candidate.port === portName);
      expect(endpoint, `${workload.name}: port ${portName}`).toBeDefined();
      expect(endpoint!.path).toBe("/metrics");
      const job = endpoint!.relabelings?.find((relabeling) => relabeling.targetLabel === "job");
      expect(job?.sourceLabels).toEqual(["__meta_kubernetes_pod_label_app_kubernetes_io_component"]);
      expect(job?.replacement?.replace("$1", workload.podLabels["app.kubernetes.io/component"]!)).toBe(workload.name);
    }
    // Migration and maintenance pods are short-lived: maintenance pushes its figures instead.
    for (const workload of workloads.filter((candidate) => candidate.kind !== "Deployment")) {
      expect(selectorMatches(spec.selector, workload.podLabels), workload.name).toBe(false);
    }
  });

  it("scrapes only ports that the metrics NetworkPolicy opens to the monitoring namespace", () => {
    const policy = ofKind<INetworkPolicy>(objects, "NetworkPolicy").find((candidate) => candidate.metadata.name === "allow-metrics-scrape")!;
    const opened = new Set((policy.spec?.ingress ?? []).flatMap((rule) => (rule.ports ?? []).map((port) => port.port)));
    const scraped = ofKind<IPodMonitor>(objects, "PodMonitor")[0]!.spec!.podMetricsEndpoints!.map((endpoint) => endpoint.port);
    for (const workload of deployments) {
      const ports = workload.containers.flatMap((container) => container.ports ?? []).filter((port) => scraped.includes(port.name));
      expect(ports.length, workload.name).toBeGreaterThan(0);
      for (const port of ports) expect(opened.has(port.containerPort), `${workload.name}: ${port.name}`).toBe(true);
      expect(selectorMatches(policy.spec?.podSelector, workload.podLabels), workload.name).toBe(true);
    }
  });
});

describe.each(overlayNames)("the shipped %s overlay", (overlay) => {
  it("has no Prometheus Operator objects: they are opted into with components/prometheus-operator", () => {
    const kinds = renderOverlay(overlay).map((object) => object.kind);
    expect(kinds).not.toContain("PrometheusRule");
    expect(kinds).not.toContain("PodMonitor");
  });
});
