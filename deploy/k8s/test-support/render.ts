import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

/** The repository root, whatever directory vitest was started from. */
export const repositoryRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** The overlays that ship, in deploy/k8s/overlays. */
export const overlayNames = ["dev", "prod"] as const;
/**
 * Fixtures in deploy/k8s/test-support/overlays, never deployed: a shipped overlay with an optional
 * component on, so the generic checks also cover what an overlay that opts in renders.
 */
const fixtureOverlayNames = ["prod-tracing", "prod-monitoring"] as const;
/** Every overlay the generic checks render. */
export const renderedOverlayNames = [...overlayNames, ...fixtureOverlayNames] as const;
export type OverlayName = (typeof renderedOverlayNames)[number];

function overlayPath(name: OverlayName): string {
  const fixture = (fixtureOverlayNames as readonly string[]).includes(name);
  return fixture ? `deploy/k8s/test-support/overlays/${name}` : `deploy/k8s/overlays/${name}`;
}

/** A rendered object: only the envelope is typed; policy code narrows by kind. */
export interface RenderedObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: unknown;
}

/** `kubectl kustomize <the overlay's directory>`, parsed: exactly what `kubectl apply -k` would send. */
export function renderOverlay(name: OverlayName): RenderedObject[] {
  const path = overlayPath(name);
  let output: string;
  try {
    output = execFileSync("kubectl", ["kustomize", path], {
      cwd: repositoryRoot,
      encoding: "utf8",
      maxBuffer: 16 * 1024 * 1024,
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (error) {
    const { code, stderr } = error as { code?: string; stderr?: string };
    if (code === "ENOENT") throw new Error("kubectl is not on PATH: the manifest tests render the overlays with `kubectl kustomize` (kustomize v5)");
    throw new Error(`kubectl kustomize ${path} failed: ${stderr ?? (error as Error).message}`);
  }
  return parseAllDocuments(output).map((document) => {
    if (document.errors.length > 0) throw new Error(`overlay ${name}: ${document.errors[0]!.message}`);
    const object = document.toJS() as RenderedObject;
    if (!object?.apiVersion || !object.kind || !object.metadata?.name) {
      throw new Error(`overlay ${name} rendered an object without apiVersion, kind or name`);
    }
    return object;
  });
}

export function ofKind<T>(objects: readonly RenderedObject[], kind: string): Array<T & RenderedObject> {
  return objects.filter((object) => object.kind === kind) as Array<T & RenderedObject>;
}
