import { readFileSync } from "node:fs";
import { join } from "node:path";
import { bundlePathFor } from "@subdata/local";
import { loadConfig } from "@subdata/runtime";
import { describe, expect, it } from "vitest";
import { commandConfigs, exportsTracesWith, placeholderSecrets, processConfigs, processVariables, requiredVariables } from "./test-support/process-configs.ts";
import { renderedOverlayNames, renderOverlay, repositoryRoot, type RenderedObject } from "./test-support/render.ts";
import { environmentOf as containerEnvironment, scriptOf, workloadsOf } from "./test-support/workloads.ts";

describe.each(renderedOverlayNames)("the %s overlay's environment", (overlay) => {
  const objects = renderOverlay(overlay);
  const deployments = workloadsOf(objects).filter((workload) => workload.kind === "Deployment");
  const configMaps = new Map(objects.filter((object) => object.kind === "ConfigMap").map((object) => [object.metadata.name, object]));

  const environmentOf = (workload: (typeof deployments)[number]) => {
    const container = workload.containers[0]!;
    const fromConfigMaps = (container.envFrom ?? []).flatMap((source) => {
      const configMap = configMaps.get(source.configMapRef?.name ?? "");
      expect(configMap, `${workload.name} reads ConfigMap ${source.configMapRef?.name}`).toBeDefined();
      return Object.entries((configMap as RenderedObject).data as Record<string, string>);
    });
    const own = (container.env ?? []).map((variable) => [variable.name, variable.value ?? placeholderSecrets[variable.name] ?? "from-secret"] as const);
    return {
      script: scriptOf(container),
      names: (container.env ?? []).map((variable) => variable.name),
      environment: Object.fromEntries([...fromConfigMaps, ...own]),
    };
  };

  it("runs each Deployment's process with a configuration that loads: every required variable set, every value valid", async () => {
    for (const workload of deployments) {
      const { script, environment } = environmentOf(workload);
      const shape = processConfigs[script];
      expect(shape, `${workload.name} runs a known process (${script})`).toBeDefined();
      for (const name of requiredVariables(shape!)) expect(environment, `${workload.name} sets ${name}`).toHaveProperty(name);
      expect(() => loadConfig(shape!, environment), workload.name).not.toThrow();
      // The OTEL_* variables are checked at start-up too, by the span exporter (endpoint URL, protocol).
      await expect(exportsTracesWith(environment), workload.name).resolves.toBeTypeOf("boolean");
    }
  });

  it("sets no variable in a container that its process does not read (catches misspelt names)", () => {
    for (const workload of deployments) {
      const { script, names } = environmentOf(workload);
      const known = processVariables[script]!;
      expect(
        names.filter((name) => !known.includes(name)),
        workload.name,
      ).toEqual([]);
    }
  });

  it("runs each CronJob's command with a configuration that loads, and sets no variable it does not read", () => {
    const cronJobs = workloadsOf(objects).filter((workload) => workload.kind === "CronJob");
    expect(cronJobs.map((workload) => workload.name)).toEqual(["subdata-maintain"]);
    for (const workload of cronJobs) {
      const container = workload.containers[0]!;
      const shape = commandConfigs[(container.args ?? []).join(" ")];
      expect(shape, `${workload.name} runs a known command (${container.args?.join(" ")})`).toBeDefined();
      const environment = containerEnvironment(objects, container, placeholderSecrets);
      for (const name of requiredVariables(shape!)) expect(environment, `${workload.name} sets ${name}`).toHaveProperty(name);
      expect(() => loadConfig(shape!, environment), workload.name).not.toThrow();
      const own = (container.env ?? []).map((variable) => variable.name);
      expect(
        own.filter((name) => !Object.keys(shape!).includes(name)),
        workload.name,
      ).toEqual([]);
    }
  });

  it("puts only variables that some process reads into the shared ConfigMap", () => {
    const known = new Set([...Object.values(processVariables).flat(), ...Object.values(commandConfigs).flatMap((shape) => Object.keys(shape))]);
    for (const configMap of configMaps.values()) {
      const unknown = Object.keys(configMap.data as Record<string, string>).filter((name) => !known.has(name));
      expect(unknown, configMap.metadata.name).toEqual([]);
    }
  });

  it("gives every process that reads a rotation variable its optional Secret key, and makes nothing else optional but callers' hashes and the collector's headers", () => {
    const rotation = ["SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED", "SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS"];
    // Callers a deployment may not have (the console, the app, the CLI): their config allows no value.
    const optionalCallers = ["SUBDATA_CONSOLE_TOKEN_SHA256", "SUBDATA_APP_TOKEN_SHA256", "SUBDATA_CLI_TOKEN_SHA256"];
    // components/tracing: a collector inside the cluster usually wants no key, so its Secret may be absent.
    const tracing = ["OTEL_EXPORTER_OTLP_HEADERS"];
    let given = 0;
    for (const workload of deployments) {
      const container = workload.containers[0]!;
      const known = Object.keys(processConfigs[scriptOf(container)]!);
      const env = container.env ?? [];
      for (const name of rotation.filter((variable) => known.includes(variable))) {
        expect(env.find((variable) => variable.name === name)?.valueFrom?.secretKeyRef?.optional, `${workload.name} ${name}`).toBe(true);
        given += 1;
      }
      const optional = env.filter((variable) => variable.valueFrom?.secretKeyRef?.optional).map((variable) => variable.name);
      expect(
        optional.filter((name) => !rotation.includes(name) && !tracing.includes(name) && !optionalCallers.includes(name)),
        workload.name,
      ).toEqual([]);
    }
    // query, auth and webhook: the page-token secret each, and the webhook's previous master keys.
    expect(given).toBe(4);
  });

  it("gives each workload its own Secret of RPC credentials: callers their token, servers only the hashes of their callers'", () => {
    const credentials = Object.fromEntries(
      workloadsOf(objects).map((workload) => {
        const env = workload.containers[0]!.env ?? [];
        const references = env
          .filter((variable) => /^SUBDATA_[A-Z]+_TOKEN(_SHA256)?$/.test(variable.name))
          .map((variable) => `${variable.name} ${variable.valueFrom?.secretKeyRef?.name}/${variable.valueFrom?.secretKeyRef?.key}`);
        return [workload.name, references];
      }),
    );
    expect(credentials).toEqual({
      "subdata-query": ["SUBDATA_GATEWAY_TOKEN_SHA256 subdata-query-rpc/gateway-sha256"],
      "subdata-auth": [
        "SUBDATA_GATEWAY_TOKEN_SHA256 subdata-auth-rpc/gateway-sha256",
        "SUBDATA_CONSOLE_TOKEN_SHA256 subdata-auth-rpc/console-sha256",
        "SUBDATA_APP_TOKEN_SHA256 subdata-auth-rpc/app-sha256",
        "SUBDATA_CLI_TOKEN_SHA256 subdata-auth-rpc/cli-sha256",
      ],
      "subdata-webhook": [
        "SUBDATA_CONSOLE_TOKEN_SHA256 subdata-webhook-rpc/console-sha256",
        "SUBDATA_APP_TOKEN_SHA256 subdata-webhook-rpc/app-sha256",
        "SUBDATA_CLI_TOKEN_SHA256 subdata-webhook-rpc/cli-sha256",
      ],
      "subdata-relay": [],
      "subdata-gateway": ["SUBDATA_GATEWAY_TOKEN subdata-gateway-rpc/token"],
      "subdata-migrate": [],
      "subdata-maintain": [],
      "subdata-console": [
        "SUBDATA_CONSOLE_TOKEN subdata-console-rpc/token",
        "SUBDATA_APP_TOKEN_SHA256 subdata-console-rpc/app-sha256",
        "SUBDATA_CLI_TOKEN_SHA256 subdata-console-rpc/cli-sha256",
      ],
    });
  });

  it("gives each database process its own role's connection and the migration the owner's", () => {
    const secretOf = (workload: ReturnType<typeof workloadsOf>[number]) =>
      workload.containers[0]!.env?.find((variable) => variable.name === "DATABASE_URL")?.valueFrom?.secretKeyRef?.name;
    const byName = Object.fromEntries(workloadsOf(objects).map((workload) => [workload.name, secretOf(workload)]));
    expect(byName).toEqual({
      "subdata-query": "subdata-database-query",
      "subdata-auth": "subdata-database-auth",
      "subdata-webhook": "subdata-database-webhook",
      "subdata-relay": "subdata-database-webhook",
      "subdata-gateway": undefined,
      "subdata-console": "subdata-database-console",
      "subdata-migrate": "subdata-database-migrate",
      "subdata-maintain": "subdata-database-maintain",
    });
  });
});

describe("the prod overlay's proxy hops", () => {
  const gatewayEnvironment = (overlay: "dev" | "prod") => {
    const objects = renderOverlay(overlay);
    const gateway = workloadsOf(objects).find((workload) => workload.name === "subdata-gateway")!;
    return containerEnvironment(objects, gateway.containers[0]!, placeholderSecrets);
  };

  it("trusts exactly the one hop it documents (the load balancer), so clients keep their own address and failed-auth bucket", () => {
    const environment = gatewayEnvironment("prod");
    expect(environment.SUBDATA_TRUST_PROXY).toBe("1");
    expect(loadConfig(processConfigs[bundlePathFor("gateway")]!, environment).SUBDATA_TRUST_PROXY).toBe(1);
    const overlay = readFileSync(join(repositoryRoot, "deploy/k8s/overlays/prod/kustomization.yaml"), "utf8");
    expect(overlay).toMatch(/# One proxy hop in front of the gateway[\s\S]*SUBDATA_TRUST_PROXY=1/);
  });

  it("leaves dev, which has no proxy in front, trusting none", () => {
    expect(gatewayEnvironment("dev").SUBDATA_TRUST_PROXY).toBe("false");
  });
});

describe("docs/operations.md", () => {
  const operations = readFileSync(join(repositoryRoot, "docs/operations.md"), "utf8");

  it("documents every environment variable of every service, the relay, the gateway and the maintenance task", () => {
    const variables = [...new Set([...Object.values(processConfigs), ...Object.values(commandConfigs)].flatMap((shape) => Object.keys(shape)))];
    expect(variables.length).toBeGreaterThan(20);
    expect(variables.filter((name) => !operations.includes(`\`${name}\``))).toEqual([]);
  });

  it("documents every config key written in the config files, including ones not loaded through a shape above", () => {
    const files = [
      "services/query/src/config.ts",
      "services/auth/src/config.ts",
      "services/webhook/src/config.ts",
      "services/webhook/src/pipeline-config.ts",
      "services/relay/src/config.ts",
      "services/events/src/event-stream.ts",
      "services/cli/src/maintain/maintain-settings.ts",
      "gateway/src/config.ts",
    ];
    const names = files.flatMap((file) => {
      const text = readFileSync(join(repositoryRoot, file), "utf8");
      const shapeKeys = [...text.matchAll(/^\s+([A-Z][A-Z0-9_]+):/gm)].map((match) => match[1]!);
      const envReads = [...text.matchAll(/process\.env\.([A-Z][A-Z0-9_]+)/g)].map((match) => match[1]!);
      return [...shapeKeys, ...envReads];
    });
    expect(names.length).toBeGreaterThan(20);
    expect([...new Set(names)].filter((name) => !operations.includes(`\`${name}\``))).toEqual([]);
  });

  // Rendered while the file is collected, like every overlay here: four kustomize runs inside one test
  // would hold it to a single test's time limit.
  const everyOverlay = renderedOverlayNames.flatMap((overlay) => renderOverlay(overlay));

  it("names every Secret and key the manifests reference, optional components included", () => {
    const objects = everyOverlay;
    const references = workloadsOf(objects).flatMap((workload) =>
      workload.containers.flatMap((container) =>
        (container.env ?? []).flatMap((variable) => (variable.valueFrom?.secretKeyRef ? [variable.valueFrom.secretKeyRef] : [])),
      ),
    );
    expect(references.length).toBeGreaterThan(0);
    for (const reference of references) {
      expect(operations, `${reference.name}/${reference.key}`).toContain(`\`${reference.name}\``);
      expect(operations, `${reference.name}/${reference.key}`).toMatch(new RegExp(`${reference.name}[^\\n]*--from-literal=${reference.key}=`));
    }
  });
});
