import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";

// The apimachinery LabelSelector, reached through a kind that has one (no direct dependency on the
// transitive @kubernetes-models/apimachinery package).
type ILabelSelector = NonNullable<NonNullable<IPodDisruptionBudget["spec"]>["selector"]>;

/** Kubernetes label-selector semantics: every matchLabels pair and every expression must hold. */
export function selectorMatches(selector: ILabelSelector | undefined, labels: Readonly<Record<string, string>>): boolean {
  if (!selector) return false;
  const pairsHold = Object.entries(selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
  const expressionsHold = (selector.matchExpressions ?? []).every((expression) => {
    const value = labels[expression.key];
    switch (expression.operator) {
      case "In":
        return value !== undefined && (expression.values ?? []).includes(value);
      case "NotIn":
        return value === undefined || !(expression.values ?? []).includes(value);
      case "Exists":
        return value !== undefined;
      case "DoesNotExist":
        return value === undefined;
      default:
        throw new Error(`unknown selector operator ${expression.operator}`);
    }
  });
  return pairsHold && expressionsHold;
}

/** An empty selector ({}) selects every pod, as in NetworkPolicy.spec.podSelector. */
export function isEmptySelector(selector: ILabelSelector | undefined): boolean {
  return !!selector && Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0;
}
