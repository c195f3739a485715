/**
 * The Prometheus Operator's PrometheusRule for deploy/k8s/components/prometheus-operator, made from
 * deploy/observability/prometheus-rules.yaml: the rule file's `groups` become the object's `spec`
 * unchanged, as text indented under `spec:`, so a plain Prometheus (`rule_files:`) and the Operator load
 * the same rules. `npm run generate:monitoring` writes it; a test fails while the committed copy differs.
 */

export const ruleFilePath = "deploy/observability/prometheus-rules.yaml";
export const prometheusRulePath = "deploy/k8s/components/prometheus-operator/prometheus-rule.yaml";

export function prometheusRuleText(ruleFile: string): string {
  const lines = ruleFile.split("\n");
  const body = lines.slice(lines.findIndex((line) => line.startsWith("groups:")));
  if (body.length === 0 || !body[0]?.startsWith("groups:")) throw new Error(`${ruleFilePath} has no top-level groups:`);
  return [
    `# Generated from ${ruleFilePath} by \`npm run generate:monitoring\`. Do not edit: change the rule file.`,
    "apiVersion: monitoring.coreos.com/v1",
    "kind: PrometheusRule",
    "metadata:",
    "  name: subdata",
    "  labels:",
    "    app.kubernetes.io/name: subdata",
    "    app.kubernetes.io/component: monitoring",
    "spec:",
    ...body.map((line) => (line === "" ? line : `  ${line}`)),
  ].join("\n");
}
