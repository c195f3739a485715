import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import axe from "axe-core";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's chromium (`.ci/run` installs it); no browser is downloaded. */
const CHROMIUM = process.env.SUBDATA_CHROMIUM ?? "/usr/bin/chromium";

/** Screenshots of each screen land here (git-ignored), for a person to look at after a run. */
export const ARTIFACTS = fileURLToPath(new URL("../../test-results/console/", import.meta.url));

export function launchChromium(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"],
  });
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[] }>;
}

/**
 * Runs axe-core in the page (evaluated over the DevTools protocol, which the page's CSP does not
 * govern) and returns the serious and critical violations.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axe.source);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run();
    return result.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      nodes: violation.nodes.map((node) => ({ target: node.target })),
    }));
  });
  return violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
}
