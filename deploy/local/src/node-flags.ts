/**
 * The V8 flags every subdata process runs with (and, below, its malloc settings), here, in the bench and
 * in the image: the Dockerfile's NODE_OPTIONS holds NODE_OPTIONS_FLAGS and its ENTRYPOINT
 * COMMAND_LINE_FLAGS, because Node refuses --heap-growing-percent in NODE_OPTIONS (exit 9);
 * deploy/k8s/docker-files.test.ts keeps them equal and runs node with both.
 *
 * A semi-space of 8 MB instead of Node 20's 16 MB caps the young generation at 24 MB instead of 48 MB:
 * 10–20 MB less peak RSS per process under 64-connection load, with scavenges twice as frequent but
 * GC time per request within the bench's noise (docs/decisions.md, "V8 young generation").
 *
 * An old space of at most 128 MB makes V8 collect it when it grows instead of letting it grow: with the
 * default limit (gigabytes on a big host), the gateway's RSS under load reached 164–245 MB of mostly
 * dead objects and external Buffers; capped, 118–137 MB, CPU per request unchanged within noise. The
 * live heap under the bench's 64-connection load stays well below it. A process whose live heap
 * outgrew it would die with V8's out-of-memory error and restart: raise it together with the memory
 * limit (about half of it) for heavier deployments (docs/decisions.md, "V8 heap limits").
 *
 * A heap growing factor of 2 (--heap-growing-percent=100): with V8's own factor the old-space limit sat
 * ~15 MB above a ~25 MB live heap, less than the young generation, so V8 began incremental marking right
 * after every full collection: under list-page load the gateway ran a mark-compact every ~130 ms (80–100
 * per run against ~60 scavenges). At 2 it runs 25–45; gateway CPU per list page 590 against 753–990 µs with
 * V8's factor, peak RSS +15–20 MB (docs/decisions.md, "V8 heap growing factor").
 */
/** Flags Node accepts in NODE_OPTIONS: the image sets them there, so a Deployment can override them. */
export const NODE_OPTIONS_FLAGS: readonly string[] = ["--max-semi-space-size=8", "--max-old-space-size=128"];
/** Flags Node accepts only on its command line: the image's ENTRYPOINT passes them. */
export const COMMAND_LINE_FLAGS: readonly string[] = ["--heap-growing-percent=100"];
export const SERVICE_NODE_FLAGS: readonly string[] = [...NODE_OPTIONS_FLAGS, ...COMMAND_LINE_FLAGS];

/**
 * glibc's allocator settings for every service process (GLIBC_TUNABLES): the image's ENV, and
 * deploy/local's children (npm start, the bench) unless the caller's environment sets the variable.
 * Two arenas and a fixed 128 KB mmap threshold (which also holds the trim threshold at 128 KB): peak RSS
 * under load 8–17 MB lower (medians) in the gateway, query and webhook services, CPU unchanged within
 * noise; neither setting alone made a difference (docs/decisions.md, "glibc malloc settings").
 */
export const MALLOC_TUNABLES = "glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072";

/** The arguments of `node` for one source entry point (npm start): the flags above, then tsx, then the script. */
export function serviceNodeArgs(entry: string): string[] {
  return [...SERVICE_NODE_FLAGS, "--import", "tsx", entry];
}
