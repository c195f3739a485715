import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { CronJob } from "kubernetes-models/batch/v1/CronJob";
import { Job } from "kubernetes-models/batch/v1/Job";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { PodMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import type { RenderedObject } from "./render.ts";

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: never) => Validatable;

// The kinds subdata deploys, by "apiVersion/kind". A kind missing here is a test failure, not a skip:
// adding a new kind of object means adding its schema.
const models: Readonly<Record<string, ModelClass>> = {
  "v1/ConfigMap": ConfigMap,
  "v1/Namespace": Namespace,
  "v1/Service": Service,
  "v1/ServiceAccount": ServiceAccount,
  "apps/v1/Deployment": Deployment,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "batch/v1/Job": Job,
  "batch/v1/CronJob": CronJob,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  // The Prometheus Operator's CRDs (components/prometheus-operator), from the same project's models.
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
  "monitoring.coreos.com/v1/PodMonitor": PodMonitor,
};

/**
 * Validates one object against the Kubernetes OpenAPI schema of its kind (kubernetes-models). Throws
 * for an unknown apiVersion/kind or a schema violation. The schemas do not reject unknown fields, so
 * the policy tests check the fields that matter by path.
 */
export function validateAgainstSchema(object: RenderedObject): void {
  const key = `${object.apiVersion}/${object.kind}`;
  const Model = models[key];
  if (!Model) throw new Error(`no schema for ${key} (${object.metadata.name}): add its model to deploy/k8s/test-support/schemas.ts`);
  new Model(object as never).validate();
}
