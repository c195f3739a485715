import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { prometheusRulePath, prometheusRuleText, ruleFilePath } from "./prometheus-rule.ts";

// `npm run generate:monitoring`: rewrites the component's PrometheusRule from the rule file.
const root = fileURLToPath(new URL("../../", import.meta.url));
writeFileSync(`${root}${prometheusRulePath}`, prometheusRuleText(readFileSync(`${root}${ruleFilePath}`, "utf8")));
process.stdout.write(`wrote ${prometheusRulePath}\n`);
