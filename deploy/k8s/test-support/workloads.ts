import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { ICronJob } from "kubernetes-models/batch/v1/CronJob";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { IPodSpec } from "kubernetes-models/v1/PodSpec";
import { ofKind, type RenderedObject } from "./render.ts";

/** A pod template of a Deployment, Job or CronJob, with what the policy tests look at. */
export interface Workload {
  kind: "Deployment" | "Job" | "CronJob";
  name: string;
  podLabels: Record<string, string>;
  pod: IPodSpec;
  containers: IContainer[];
  object: RenderedObject;
}

export function workloadsOf(objects: readonly RenderedObject[]): Workload[] {
  const deployments = ofKind<IDeployment>(objects, "Deployment").map((object) => ({ kind: "Deployment" as const, object, template: object.spec?.template }));
  const jobs = ofKind<IJob>(objects, "Job").map((object) => ({ kind: "Job" as const, object, template: object.spec?.template }));
  const cronJobs = ofKind<ICronJob>(objects, "CronJob").map((object) => ({
    kind: "CronJob" as const,
    object,
    template: object.spec?.jobTemplate.spec?.template,
  }));
  return [...deployments, ...jobs, ...cronJobs].map(({ kind, object, template }) => {
    if (!template?.spec) throw new Error(`${kind}/${object.metadata.name} has no pod template`);
    return {
      kind,
      name: object.metadata.name,
      podLabels: template.metadata?.labels ?? {},
      pod: template.spec,
      containers: [...(template.spec.initContainers ?? []), ...template.spec.containers],
      object,
    };
  });
}

/** The script a container runs: its first argument (the image's ENTRYPOINT is `node`, so a bundle's path). */
export function scriptOf(container: IContainer): string {
  const script = container.args?.[0] ?? container.command?.[0];
  if (!script) throw new Error(`container ${container.name} names no script`);
  return script;
}

/**
 * A container's environment as its process would see it: the ConfigMaps it reads whole, then its own
 * variables (a ConfigMap key read from the rendered ConfigMap, left out when optional and absent),
 * Secret references standing in as the given placeholders (or "from-secret").
 */
export function environmentOf(
  objects: readonly RenderedObject[],
  container: IContainer,
  placeholders: Readonly<Record<string, string>>,
): Record<string, string> {
  const fromConfigMaps = (container.envFrom ?? []).flatMap((source) => {
    const name = source.configMapRef?.name;
    const configMap = objects.find((object) => object.kind === "ConfigMap" && object.metadata.name === name);
    if (!configMap) throw new Error(`container ${container.name} reads ConfigMap ${name}, which the overlay does not render`);
    return Object.entries((configMap.data as Record<string, string> | undefined) ?? {});
  });
  const own = (container.env ?? []).flatMap((variable): Array<readonly [string, string]> => {
    const reference = variable.valueFrom?.configMapKeyRef;
    if (!reference) return [[variable.name, variable.value ?? placeholders[variable.name] ?? "from-secret"]];
    const configMap = objects.find((object) => object.kind === "ConfigMap" && object.metadata.name === reference.name);
    const value = (configMap?.data as Record<string, string> | undefined)?.[reference.key];
    if (value !== undefined) return [[variable.name, value]];
    if (reference.optional) return [];
    throw new Error(`container ${container.name} reads ${reference.key} of ConfigMap ${reference.name}, which the overlay does not render`);
  });
  return Object.fromEntries([...fromConfigMaps, ...own]);
}
