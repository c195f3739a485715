import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { selectorMatches } from "./test-support/label-selector.ts";
import { exportsTracesWith, placeholderSecrets } from "./test-support/process-configs.ts";
import { ofKind, overlayNames, renderedOverlayNames, renderOverlay, repositoryRoot } from "./test-support/render.ts";
import { environmentOf, workloadsOf } from "./test-support/workloads.ts";

/** The port an OTLP endpoint URL points at (the scheme's default when it names none). */
function portOf(endpoint: string): number {
  const url = new URL(endpoint);
  return Number(url.port || (url.protocol === "https:" ? 443 : 80));
}

describe.each(renderedOverlayNames)("the %s overlay's trace export", (overlay) => {
  const objects = renderOverlay(overlay);
  const policies = ofKind<INetworkPolicy>(objects, "NetworkPolicy");

  // Setting the variable alone gives only "OTLP export failed" logs under default-deny.
  it("lets every process that is given an OTLP endpoint reach its port through an egress policy", () => {
    for (const workload of workloadsOf(objects)) {
      const environment = environmentOf(objects, workload.containers[0]!, placeholderSecrets);
      const endpoint = environment.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? environment.OTEL_EXPORTER_OTLP_ENDPOINT;
      if (endpoint === undefined) continue;
      const port = portOf(endpoint);
      const open = policies
        .filter((policy) => selectorMatches(policy.spec?.podSelector, workload.podLabels))
        .flatMap((policy) => policy.spec?.egress ?? [])
        .some((rule) => rule.ports === undefined || rule.ports.some((allowed) => allowed.port === port && (allowed.protocol ?? "TCP") === "TCP"));
      expect(open, `${workload.name} → ${endpoint}`).toBe(true);
    }
  });
});

describe.each(overlayNames)("the shipped %s overlay", (overlay) => {
  it("exports no traces: tracing is opted into with components/tracing", async () => {
    const objects = renderOverlay(overlay);
    for (const workload of workloadsOf(objects)) {
      expect(await exportsTracesWith(environmentOf(objects, workload.containers[0]!, placeholderSecrets)), workload.name).toBe(false);
    }
  });
});

describe("components/tracing, enabled as the prod-tracing fixture overlay does", () => {
  const objects = renderOverlay("prod-tracing");
  const workloads = workloadsOf(objects);
  const deployments = workloads.filter((workload) => workload.kind === "Deployment");
  const settingsFile = join(repositoryRoot, "deploy/k8s/test-support/overlays/prod-tracing/tracing-settings.yaml");
  const settings = (parse(readFileSync(settingsFile, "utf8")) as { data: Record<string, string> }).data;

  it("gives every Deployment the overlay's endpoint, not the component's placeholder, and the migration none", async () => {
    expect(deployments.length).toBe(6);
    for (const workload of deployments) {
      const environment = environmentOf(objects, workload.containers[0]!, placeholderSecrets);
      expect(environment.OTEL_EXPORTER_OTLP_ENDPOINT, workload.name).toBe(settings.endpoint);
      expect(await exportsTracesWith(environment), workload.name).toBe(true);
    }
    const migrate = workloads.find((workload) => workload.kind === "Job")!;
    const migrateNames = Object.keys(environmentOf(objects, migrate.containers[0]!, placeholderSecrets));
    expect(migrateNames.filter((name) => name.startsWith("OTEL_"))).toEqual([]);
  });

  it("takes OTEL_EXPORTER_OTLP_HEADERS in every Deployment from the optional Secret subdata-otlp-headers", () => {
    for (const workload of deployments) {
      const headers = workload.containers[0]!.env?.find((variable) => variable.name === "OTEL_EXPORTER_OTLP_HEADERS");
      expect(headers?.valueFrom?.secretKeyRef, workload.name).toEqual({ name: "subdata-otlp-headers", key: "headers", optional: true });
    }
  });

  it("opens egress from every subdata Deployment's pods to the collector's pods in its namespace on TCP 4318, and nothing else", () => {
    const policy = ofKind<INetworkPolicy>(objects, "NetworkPolicy").find((candidate) => candidate.metadata.name === "allow-otlp-egress");
    expect(policy).toBeDefined();
    const selected = workloads.filter((workload) => selectorMatches(policy!.spec?.podSelector, workload.podLabels)).map((workload) => workload.name);
    expect(selected.sort()).toEqual(deployments.map((workload) => workload.name).sort());
    expect(policy!.spec?.policyTypes).toEqual(["Egress"]);
    expect(policy!.spec?.egress).toEqual([
      {
        to: [
          {
            namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": settings.collectorNamespace } },
            podSelector: { matchLabels: { "app.kubernetes.io/name": settings.collectorName } },
          },
        ],
        ports: [{ protocol: "TCP", port: 4318 }],
      },
    ]);
    expect(portOf(settings.endpoint!)).toBe(4318);
  });
});
