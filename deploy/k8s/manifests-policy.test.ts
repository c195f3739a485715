import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { IHorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import type { IService } from "kubernetes-models/v1/Service";
import { BUNDLE_ENTRIES, bundlePathFor } from "@subdata/local";
import { describe, expect, it } from "vitest";
import { isEmptySelector, selectorMatches } from "./test-support/label-selector.ts";
import { ofKind, renderedOverlayNames, renderOverlay, repositoryRoot, type RenderedObject } from "./test-support/render.ts";
import { scriptOf, workloadsOf } from "./test-support/workloads.ts";

// OTEL_EXPORTER_OTLP_HEADERS (and …_TRACES_HEADERS) may carry a collector's API key.
const SECRET_LOOKING = /SECRET|TOKEN|PASSWORD|KEY|DATABASE_URL|_HEADERS$/;
const PRIVATE_RANGES = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10", "127.0.0.0/8"];

describe.each(renderedOverlayNames)("the %s overlay", (overlay) => {
  const objects = renderOverlay(overlay);
  const workloads = workloadsOf(objects);
  const deployments = workloads.filter((workload) => workload.kind === "Deployment");
  const policies = ofKind<INetworkPolicy>(objects, "NetworkPolicy");

  it("runs the six long-lived processes, the migration and the maintenance task", () => {
    expect(deployments.map((workload) => workload.name).sort()).toEqual([
      "subdata-auth",
      "subdata-console",
      "subdata-gateway",
      "subdata-query",
      "subdata-relay",
      "subdata-webhook",
    ]);
    expect(workloads.filter((workload) => workload.kind === "Job").map((workload) => workload.name)).toEqual(["subdata-migrate"]);
    expect(workloads.filter((workload) => workload.kind === "CronJob").map((workload) => workload.name)).toEqual(["subdata-maintain"]);
  });

  it("runs maintenance as an hourly CronJob whose runs never overlap and end before the next is due", () => {
    const maintain = workloads.find((workload) => workload.kind === "CronJob")!;
    const spec = maintain.object.spec as {
      schedule: string;
      concurrencyPolicy?: string;
      startingDeadlineSeconds?: number;
      jobTemplate: { spec: { activeDeadlineSeconds?: number; backoffLimit?: number; ttlSecondsAfterFinished?: number } };
    };
    expect(spec.schedule).toMatch(/^\d{1,2} \* \* \* \*$/);
    expect(spec.concurrencyPolicy).toBe("Forbid");
    expect(spec.startingDeadlineSeconds).toBeGreaterThan(0);
    expect(spec.jobTemplate.spec.activeDeadlineSeconds).toBeLessThan(3600);
    expect(spec.jobTemplate.spec.backoffLimit).toBeGreaterThan(0);
    expect(spec.jobTemplate.spec.ttlSecondsAfterFinished).toBeGreaterThan(0);
    expect(maintain.pod.restartPolicy).toBe("Never");
    expect(maintain.containers[0]!.args).toEqual([bundlePathFor("subdata"), "maintain"]);
  });

  it("announces every long-lived process's /metrics port to Prometheus, on a port the container opens", () => {
    for (const workload of deployments) {
      const template = (workload.object.spec as { template: { metadata?: { annotations?: Record<string, string> } } }).template;
      const annotations = template.metadata?.annotations ?? {};
      expect(annotations["prometheus.io/scrape"], workload.name).toBe("true");
      expect(annotations["prometheus.io/path"], workload.name).toBe("/metrics");
      const opened = workload.containers.flatMap((container) => (container.ports ?? []).map((port) => String(port.containerPort)));
      expect(opened, workload.name).toContain(annotations["prometheus.io/port"]);
    }
  });

  it("gives every long-lived container startup, readiness and liveness probes", () => {
    const missing = deployments.flatMap((workload) =>
      workload.containers.flatMap((container) =>
        (["startupProbe", "readinessProbe", "livenessProbe"] as const)
          .filter((probe) => !container[probe])
          .map((probe) => `${workload.name}/${container.name}: ${probe}`),
      ),
    );
    expect(missing).toEqual([]);
  });

  it("probes the Connect services with native gRPC health checks and the HTTP processes with GETs", () => {
    const probeKinds = Object.fromEntries(
      deployments.map((workload) => {
        const probe = workload.containers[0]!.readinessProbe!;
        return [workload.name, probe.grpc ? `grpc:${probe.grpc.port}` : `http:${probe.httpGet?.path}`];
      }),
    );
    expect(probeKinds).toEqual({
      "subdata-query": "grpc:8091",
      "subdata-auth": "grpc:8092",
      "subdata-webhook": "grpc:8093",
      "subdata-relay": "http:/readyz",
      "subdata-gateway": "http:/readyz",
      "subdata-console": "grpc:8095",
    });
  });

  it("sets CPU and memory requests and limits on every container", () => {
    const missing = workloads.flatMap((workload) =>
      workload.containers.flatMap((container) =>
        (["requests", "limits"] as const).flatMap((bound) =>
          (["cpu", "memory"] as const)
            .filter((resource) => container.resources?.[bound]?.[resource] === undefined)
            .map((resource) => `${workload.name}/${container.name}: ${bound}.${resource}`),
        ),
      ),
    );
    expect(missing).toEqual([]);
  });

  it("meets the restricted pod security profile on every pod and container, with a writable /tmp only", () => {
    for (const workload of workloads) {
      const pod = workload.pod;
      expect(pod.securityContext, workload.name).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: "RuntimeDefault" } });
      expect(pod.automountServiceAccountToken, workload.name).toBe(false);
      expect(pod.hostNetwork ?? false, workload.name).toBe(false);
      const tmp = pod.volumes?.find((volume) => volume.name === "tmp");
      expect(tmp?.emptyDir, `${workload.name}: emptyDir at /tmp`).toBeDefined();
      for (const container of workload.containers) {
        const where = `${workload.name}/${container.name}`;
        expect(container.securityContext, where).toMatchObject({
          runAsNonRoot: true,
          runAsUser: 1000,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"] },
          seccompProfile: { type: "RuntimeDefault" },
        });
        expect(container.securityContext?.privileged ?? false, where).toBe(false);
        expect(container.securityContext?.capabilities?.add ?? [], where).toEqual([]);
        expect(container.volumeMounts?.find((mount) => mount.mountPath === "/tmp")?.name, where).toBe("tmp");
      }
    }
  });

  it("gives every ServiceAccount no API token", () => {
    const serviceAccounts = objects.filter((object) => object.kind === "ServiceAccount");
    expect(serviceAccounts.length).toBe(workloads.length);
    for (const account of serviceAccounts) expect(account.automountServiceAccountToken, account.metadata.name).toBe(false);
  });

  it("takes every secret-looking variable from a Secret, never from a literal value or a ConfigMap", () => {
    const literals = workloads.flatMap((workload) =>
      workload.containers.flatMap((container) =>
        (container.env ?? [])
          .filter((variable) => SECRET_LOOKING.test(variable.name) && !variable.valueFrom?.secretKeyRef)
          .map((variable) => `${workload.name}/${container.name}: ${variable.name}`),
      ),
    );
    expect(literals).toEqual([]);
    const configKeys = objects
      .filter((object) => object.kind === "ConfigMap")
      .flatMap((object) => Object.keys((object.data as Record<string, string> | undefined) ?? {}));
    expect(configKeys.filter((key) => SECRET_LOOKING.test(key))).toEqual([]);
  });

  it("contains no Secret objects (they are created out of band)", () => {
    expect(objects.filter((object) => object.kind === "Secret").map((object) => object.metadata.name)).toEqual([]);
  });

  it("covers every Deployment with a PodDisruptionBudget whose selector matches its pods", () => {
    const budgets = ofKind<IPodDisruptionBudget>(objects, "PodDisruptionBudget");
    const uncovered = deployments
      .filter((workload) => !budgets.some((budget) => selectorMatches(budget.spec?.selector, workload.podLabels)))
      .map((workload) => workload.name);
    expect(uncovered).toEqual([]);
  });

  it("denies all traffic by default and opens every pod's flows with at least one specific NetworkPolicy", () => {
    const defaultDeny = policies.find(
      (policy) =>
        isEmptySelector(policy.spec?.podSelector) &&
        (policy.spec?.policyTypes ?? []).includes("Ingress") &&
        (policy.spec?.policyTypes ?? []).includes("Egress") &&
        !policy.spec?.ingress?.length &&
        !policy.spec?.egress?.length,
    );
    expect(defaultDeny, "a default-deny policy").toBeDefined();
    const uncovered = workloads
      .filter(
        (workload) => !policies.some((policy) => !isEmptySelector(policy.spec?.podSelector) && selectorMatches(policy.spec?.podSelector, workload.podLabels)),
      )
      .map((workload) => workload.name);
    expect(uncovered).toEqual([]);
  });

  it("lets the webhook workers reach the internet but no private, loopback, link-local or CGNAT range", () => {
    const webhook = deployments.find((workload) => workload.name === "subdata-webhook")!;
    const rules = policies.filter((policy) => selectorMatches(policy.spec?.podSelector, webhook.podLabels)).flatMap((policy) => policy.spec?.egress ?? []);
    const toWorld = rules.filter((rule) => rule.to?.some((peer) => peer.ipBlock?.cidr === "0.0.0.0/0"));
    expect(toWorld.length).toBe(1);
    const worldBlock = toWorld[0]!.to!.find((peer) => peer.ipBlock?.cidr === "0.0.0.0/0")!.ipBlock!;
    expect([...(worldBlock.except ?? [])].sort()).toEqual(expect.arrayContaining([...PRIVATE_RANGES].sort()));
    const ports = (toWorld[0]!.ports ?? []).map((port) => port.port).sort();
    expect(ports).toEqual(overlay === "dev" ? [443, 80].sort() : [443]);
  });

  it("lets only the gateway and the console (and admin clients) reach the internal services, and anyone the two edges", () => {
    const ingressFrom = (component: string) => {
      const labels = deployments.find((workload) => workload.name === `subdata-${component}`)!.podLabels;
      return policies
        .filter((policy) => selectorMatches(policy.spec?.podSelector, labels))
        .flatMap((policy) => policy.spec?.ingress ?? [])
        .flatMap((rule) =>
          rule.from === undefined
            ? ["anyone"]
            : rule.from.map((peer) =>
                peer.ipBlock
                  ? `nodes:${peer.ipBlock.cidr}`
                  : peer.namespaceSelector
                    ? `scraper:${labelsText(peer.namespaceSelector.matchLabels)}`
                    : labelsText(peer.podSelector?.matchLabels),
              ),
        );
    };
    // The scraper (the monitoring namespace) reaches only the metrics ports, never the service ports.
    const metricsPorts = [8094, 9080, 9091, 9092, 9093, 9096];
    for (const policy of policies) {
      for (const rule of policy.spec?.ingress ?? []) {
        if (!(rule.from ?? []).some((peer) => peer.namespaceSelector)) continue;
        expect((rule.ports ?? []).map((port) => port.port).sort(), policy.metadata?.name).toEqual(metricsPorts);
      }
    }
    const internal = (peer: string) => !peer.startsWith("nodes:") && !peer.startsWith("scraper:");
    const gateway = labelsText({ "app.kubernetes.io/name": "subdata", "app.kubernetes.io/component": "gateway" });
    const admin = labelsText({ "subdata/admin-client": "true" });
    expect(ingressFrom("query").filter(internal)).toEqual([gateway]);
    const consolePods = labelsText({ "app.kubernetes.io/name": "subdata", "app.kubernetes.io/component": "console" });
    expect(ingressFrom("auth").filter(internal).sort()).toEqual([gateway, admin, consolePods].sort());
    expect(ingressFrom("webhook").filter(internal).sort()).toEqual([admin, consolePods].sort());
    expect(ingressFrom("gateway")).toContain("anyone");
    // The console's page is an edge (anyone, on 8081 only); its session RPC (8095) answers admin clients only.
    const consoleRules = policies
      .filter((policy) => selectorMatches(policy.spec?.podSelector, deployments.find((workload) => workload.name === "subdata-console")!.podLabels))
      .flatMap((policy) => policy.spec?.ingress ?? []);
    const openToAnyone = consoleRules.filter((rule) => rule.from === undefined);
    expect(openToAnyone.flatMap((rule) => (rule.ports ?? []).map((port) => port.port))).toEqual([8081]);
    const sessionRpc = consoleRules.filter((rule) => (rule.ports ?? []).some((port) => port.port === 8095));
    expect(
      sessionRpc
        .flatMap((rule) => rule.from ?? [])
        .map((peer) => (peer.ipBlock ? "nodes" : labelsText(peer.podSelector?.matchLabels)))
        .filter((peer) => peer !== "nodes"),
    ).toEqual([admin]);
    expect(ingressFrom("relay").filter(internal)).toEqual([]);
  });

  it("scales the gateway, query and webhook Deployments with HorizontalPodAutoscalers that target them", () => {
    const autoscalers = ofKind<IHorizontalPodAutoscaler>(objects, "HorizontalPodAutoscaler");
    const targets = autoscalers.map((autoscaler) => {
      const ref = autoscaler.spec!.scaleTargetRef;
      expect(
        deployments.some((workload) => ref.kind === "Deployment" && workload.name === ref.name),
        `${ref.kind}/${ref.name} exists`,
      ).toBe(true);
      expect(autoscaler.spec!.minReplicas!).toBeLessThanOrEqual(autoscaler.spec!.maxReplicas);
      return ref.name;
    });
    expect(targets.sort()).toEqual(["subdata-gateway", "subdata-query", "subdata-webhook"]);
    // A Deployment the autoscaler owns must not carry its own count: every apply would reset it.
    for (const target of targets) {
      const deployment = deployments.find((workload) => workload.name === target)!.object;
      expect((deployment.spec as { replicas?: number }).replicas, target).toBeUndefined();
    }
  });

  it("gives every port a Service except the relay, and points every Service at pods that exist", () => {
    const services = ofKind<IService>(objects, "Service");
    expect(services.map((service) => service.metadata.name).sort()).toEqual([
      "subdata-auth",
      "subdata-console",
      "subdata-gateway",
      "subdata-query",
      "subdata-webhook",
    ]);
    for (const service of services) {
      const selector = { matchLabels: service.spec?.selector ?? {} };
      expect(deployments.filter((workload) => selectorMatches(selector, workload.podLabels)).length, service.metadata.name).toBe(1);
    }
  });

  it("drains gracefully: a preStop pause shorter than the grace period on every Deployment", () => {
    for (const workload of deployments) {
      const pause = workload.containers[0]!.lifecycle?.preStop?.sleep?.seconds;
      expect(pause, workload.name).toBeGreaterThan(0);
      expect(workload.pod.terminationGracePeriodSeconds!, workload.name).toBeGreaterThan(pause! + 25);
    }
  });

  it("starts every container from a bundle that npm run build produces", () => {
    const bundles = Object.keys(BUNDLE_ENTRIES).map((name) => bundlePathFor(name));
    for (const workload of workloads) {
      for (const container of workload.containers) expect(bundles, `${workload.name}/${container.name}`).toContain(scriptOf(container));
    }
  });

  it("runs the migration as a bounded one-shot Job marked with the release and applied before the rollout", () => {
    const job = workloads.find((workload) => workload.kind === "Job")!;
    const spec = job.object.spec as { backoffLimit?: number; ttlSecondsAfterFinished?: number };
    expect(spec.backoffLimit).toBeGreaterThan(0);
    expect(spec.ttlSecondsAfterFinished).toBeGreaterThan(0);
    expect(job.pod.restartPolicy).toBe("Never");
    expect(job.containers[0]!.args).toEqual([bundlePathFor("subdata"), "migrate"]);
    const release = job.object.metadata.annotations?.["subdata/release"];
    const tag = job.containers[0]!.image!.split(":").at(-1);
    expect(release, "the Job's release annotation follows the image tag").toBe(tag);
    // Everything the Job needs to run under default-deny is in the pre-deploy phase.
    const preDeploy = objects.filter((object) => object.metadata.labels?.["subdata/apply-phase"] === "pre-deploy");
    const names = preDeploy.map((object) => `${object.kind}/${object.metadata.name}`).sort();
    expect(names).toEqual(
      expect.arrayContaining([
        "Job/subdata-migrate",
        "ServiceAccount/subdata-migrate",
        "NetworkPolicy/default-deny-all",
        "NetworkPolicy/allow-dns-egress",
        "NetworkPolicy/allow-postgres-egress",
        expect.stringMatching(/^Namespace\//),
      ]),
    );
    expect(preDeploy.filter((object) => object.kind === "Deployment")).toEqual([]);
  });
});

describe("the prod overlay in particular", () => {
  const objects = renderOverlay("prod");
  const workloads = workloadsOf(objects);
  const config = configData(objects);

  it("pins every image to a release tag or digest, never latest", () => {
    for (const workload of workloads) {
      for (const container of workload.containers) {
        const image = container.image ?? "";
        const pinned = /@sha256:[0-9a-f]{64}$/.test(image) || /:[^:/]+$/.test(image);
        expect(pinned && !image.endsWith(":latest") && !image.endsWith(":dev"), `${workload.name}: ${image}`).toBe(true);
      }
    }
  });

  it("runs at least two replicas of every Deployment", () => {
    const autoscalers = ofKind<IHorizontalPodAutoscaler>(objects, "HorizontalPodAutoscaler");
    for (const workload of workloads.filter((candidate) => candidate.kind === "Deployment")) {
      const autoscaler = autoscalers.find((candidate) => candidate.spec?.scaleTargetRef.name === workload.name);
      const floor = autoscaler ? autoscaler.spec!.minReplicas! : ((workload.object.spec as { replicas?: number }).replicas ?? 1);
      expect(floor, workload.name).toBeGreaterThanOrEqual(2);
    }
  });

  it("spreads every Deployment's replicas over nodes", () => {
    for (const workload of workloads.filter((candidate) => candidate.kind === "Deployment")) {
      const keys = (workload.pod.topologySpreadConstraints ?? []).map((constraint) => constraint.topologyKey);
      expect(keys, workload.name).toContain("kubernetes.io/hostname");
    }
  });

  it("keeps three JetStream replicas and refuses private webhook targets", () => {
    expect(config.SUBDATA_EVENTS_STREAM_REPLICAS).toBe("3");
    expect(config.SUBDATA_WEBHOOK_ALLOW_PRIVATE).toBe("false");
  });
});

describe("the dev overlay in particular", () => {
  const objects = renderOverlay("dev");
  const config = configData(objects);

  it("runs one replica of everything, allows private webhook targets and a single-replica stream", () => {
    for (const deployment of objects.filter((object) => object.kind === "Deployment")) {
      const replicas = (deployment.spec as { replicas?: number }).replicas;
      if (replicas !== undefined) expect(replicas, deployment.metadata.name).toBe(1);
    }
    for (const autoscaler of ofKind<IHorizontalPodAutoscaler>(objects, "HorizontalPodAutoscaler")) {
      expect(autoscaler.spec?.minReplicas, autoscaler.metadata.name).toBe(1);
    }
    expect(config.SUBDATA_WEBHOOK_ALLOW_PRIVATE).toBe("true");
    expect(config.SUBDATA_EVENTS_STREAM_REPLICAS).toBe("1");
  });
});

function configData(objects: readonly RenderedObject[]): Record<string, string> {
  const configMaps = objects.filter((object) => object.kind === "ConfigMap" && object.metadata.name.startsWith("subdata-config"));
  expect(configMaps.length).toBe(1);
  return configMaps[0]!.data as Record<string, string>;
}

function labelsText(labels: Record<string, string> | undefined): string {
  return Object.entries(labels ?? {})
    .map(([key, value]) => `${key}=${value}`)
    .sort()
    .join(",");
}

describe("the release", () => {
  it("is one version: the prod overlay's image tag is the CLI's version (subdata --version)", () => {
    const cli = JSON.parse(readFileSync(join(repositoryRoot, "services/cli/package.json"), "utf8")) as { version: string };
    const job = workloadsOf(renderOverlay("prod")).find((workload) => workload.kind === "Job")!;
    expect(job.containers[0]!.image!.split(":").at(-1)).toBe(cli.version);
  });
});
