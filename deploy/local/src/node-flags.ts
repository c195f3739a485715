/**
 * The V8 flags every subdata process runs with, here, in the bench and in the image (the Dockerfile's
 * NODE_OPTIONS holds the same list; deploy/k8s/docker-files.test.ts keeps the two equal).
 *
 * A semi-space of 8 MB instead of Node 20's 16 MB caps the young generation at 24 MB instead of 48 MB:
 * 10–20 MB less peak RSS per process under 64-connection load, with scavenges twice as frequent but
 * GC time per request within the bench's noise (docs/decisions.md, "V8 young generation").
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=8"];

/** The arguments of `node` for one source entry point (npm start): the flags above, then tsx, then the script. */
export function serviceNodeArgs(entry: string): string[] {
  return [...SERVICE_NODE_FLAGS, "--import", "tsx", entry];
}
