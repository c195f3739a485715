import { describe, expect, it } from "vitest";
import { renderedOverlayNames, renderOverlay } from "./test-support/render.ts";
import { validateAgainstSchema } from "./test-support/schemas.ts";

describe.each(renderedOverlayNames)("the %s overlay", (overlay) => {
  const objects = renderOverlay(overlay);

  it("renders with kubectl kustomize into the expected kinds of objects", () => {
    const kinds = new Set(objects.map((object) => object.kind));
    for (const kind of [
      "Namespace",
      "ConfigMap",
      "ServiceAccount",
      "Service",
      "Deployment",
      "Job",
      "PodDisruptionBudget",
      "HorizontalPodAutoscaler",
      "NetworkPolicy",
    ]) {
      expect(kinds, `rendered kinds of ${overlay}`).toContain(kind);
    }
  });

  it("renders only objects that validate against the Kubernetes schema of their kind", () => {
    const failures: string[] = [];
    for (const object of objects) {
      try {
        validateAgainstSchema(object);
      } catch (error) {
        failures.push(`${object.kind}/${object.metadata.name}: ${(error as Error).message}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it("puts every namespaced object into the overlay's own namespace", () => {
    const namespace = objects.find((object) => object.kind === "Namespace");
    expect(namespace).toBeDefined();
    const strays = objects
      .filter((object) => object.kind !== "Namespace" && object.metadata.namespace !== namespace!.metadata.name)
      .map((object) => `${object.kind}/${object.metadata.name}`);
    expect(strays).toEqual([]);
    expect(namespace!.metadata.labels?.["pod-security.kubernetes.io/enforce"]).toBe("restricted");
  });

  it("leaves the local-config settings (network, tracing, monitoring) out of the output", () => {
    const settings = ["subdata-network-settings", "subdata-tracing-settings", "subdata-monitoring-settings"];
    expect(objects.filter((object) => settings.includes(object.metadata.name))).toEqual([]);
  });
});

describe("the schema check", () => {
  it("fails an object of a kind it has no schema for", () => {
    expect(() => validateAgainstSchema({ apiVersion: "v1", kind: "Secret", metadata: { name: "x" } })).toThrow(/no schema for v1\/Secret/);
  });

  it("fails an object that breaks its kind's schema", () => {
    const broken = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x" }, spec: { replicas: "two" } };
    expect(() => validateAgainstSchema(broken)).toThrow();
  });
});
