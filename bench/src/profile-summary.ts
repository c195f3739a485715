import { readFileSync } from "node:fs";

/** A V8 .cpuprofile (what node --cpu-prof writes), reduced to where the self time went. */
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }>;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileLine {
  name: string;
  /** Share of all sampled time, 0–100. */
  percent: number;
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  byFunction: ProfileLine[];
  byModule: ProfileLine[];
}

/** Groups a script URL into what a reader acts on: a package, a workspace file, or Node itself. */
function moduleOf(url: string, functionName: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (packageMatch) return packageMatch[1] as string;
  if (url.startsWith("node:"))
    return url
      .replace(/^node:internal\/(deps\/)?/, "node:")
      .split("/")
      .slice(0, 2)
      .join("/");
  const workspace = /\/(services\/[^/]+|gateway|bench|proto)\/(.*)$/.exec(url);
  return workspace ? `${workspace[1]}/${workspace[2]}` : url;
}

export function summarizeProfile(file: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfTime = new Map<number, number>();
  let total = 0;
  profile.samples.forEach((id, index) => {
    const delta = profile.timeDeltas[index] ?? 0;
    selfTime.set(id, (selfTime.get(id) ?? 0) + delta);
    total += delta;
  });
  const functions = new Map<string, number>();
  const modules = new Map<string, number>();
  for (const [id, time] of selfTime) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    const module = moduleOf(frame.url, frame.functionName);
    const name = `${frame.functionName || "(anonymous)"} ${module}${frame.url ? `:${frame.lineNumber + 1}` : ""}`;
    functions.set(name, (functions.get(name) ?? 0) + time);
    modules.set(module, (modules.get(module) ?? 0) + time);
  }
  const rank = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, time]) => ({ name, percent: (time / Math.max(1, total)) * 100 }));
  return { file, totalMs: total / 1000, byFunction: rank(functions), byModule: rank(modules) };
}

/** Percent of the sampled time the thread was idle. */
export function idleShare(summary: ProfileSummary): number {
  return summary.byModule.find((line) => line.name === "(idle)")?.percent ?? 0;
}

export function renderProfileSummary(summary: ProfileSummary): string {
  const lines = [`${summary.file} (${(summary.totalMs / 1000).toFixed(1)} s sampled)`, "  self time by module:"];
  for (const line of summary.byModule) lines.push(`    ${line.percent.toFixed(1).padStart(5)} %  ${line.name}`);
  lines.push("  self time by function:");
  for (const line of summary.byFunction) lines.push(`    ${line.percent.toFixed(1).padStart(5)} %  ${line.name}`);
  return lines.join("\n");
}
