import { dirname, resolve } from "node:path";

/** initdb or postgres exited when it should not have; `output` is what it last said. */
export class PostgresProgramFailed extends Error {
  constructor(
    readonly program: "initdb" | "postgres",
    readonly output: string,
    summary: string,
  ) {
    super(output ? `${summary}:\n${output}` : summary);
  }
}

export interface FailureContext {
  /** The launcher's data dir (`.subdata`): deleting it starts over. */
  dataDir: string;
  /** The cluster's data directory. */
  clusterDir: string;
  port: number;
  /** Who runs Postgres, in words: "the system user postgres", "you (alice)". */
  runAs: string;
}

const PREFIX = "the embedded Postgres could not start";

/** The first line of `output` matching `pattern`, and the first "quoted" path in it (relative to the cluster). */
function findLine(output: string, pattern: RegExp, clusterDir: string): { path: string | undefined } | undefined {
  const line = output.split("\n").find((candidate) => pattern.test(candidate));
  if (line === undefined) return undefined;
  const quoted = /"([^"]+)"/.exec(line)?.[1];
  return { path: quoted === undefined ? undefined : resolve(clusterDir, quoted) };
}

/** The end of what the program printed, where it explains itself (a message may span several lines). */
function said(output: string): string {
  const tail = output
    .split("\n")
    .filter((line) => line.trim())
    .slice(-8);
  return `\n  Postgres said:\n${tail.map((line) => `    ${line.trim()}`).join("\n")}`;
}

/**
 * Turns an error from starting the embedded Postgres into what failed and what to do, naming the path
 * (or port) involved: errno codes from the launcher's own file and spawn calls, and the messages
 * initdb and postgres print for the same troubles. Anything unrecognised keeps its own message.
 */
export function explainPostgresFailure(error: unknown, context: FailureContext): string {
  const { code, path, syscall, message } = (error ?? {}) as NodeJS.ErrnoException;
  const output = error instanceof PostgresProgramFailed ? error.output : "";
  const startOver = `delete ${context.dataDir} to start over with a new cluster`;

  const portLine = findLine(output, /Address already in use/, context.clusterDir);
  if (code === "EADDRINUSE" || portLine) {
    return (
      `${PREFIX}: port ${context.port} on 127.0.0.1 is taken by another program (cluster ${context.clusterDir}). ` +
      `Stop what holds it (\`ss -ltnp 'sport = :${context.port}'\` names it) or set EMBEDDED_POSTGRES_PORT to a free port.` +
      (portLine ? said(output) : "")
    );
  }

  const lockLine = findLine(output, /lock file ".*" already exists/, context.clusterDir);
  if (lockLine) {
    const pid = /PID (\d+)/.exec(output)?.[1] ?? "?";
    const lockFile = lockLine.path ?? resolve(context.clusterDir, "postmaster.pid");
    return (
      `${PREFIX}: the lock file ${lockFile} names process ${pid}, which is still running. ` +
      `If \`ps -p ${pid}\` shows a postgres, another launcher is using this cluster: stop it first. ` +
      `If it shows another program, the lock is stale: delete ${lockFile} and start again.` +
      said(output)
    );
  }

  const fullLine = findLine(output, /No space left on device/, context.clusterDir);
  if (code === "ENOSPC" || fullLine) {
    const where = (code === "ENOSPC" ? path : fullLine?.path) ?? context.clusterDir;
    return (
      `${PREFIX}: the disk is full, writing ${where} failed (no space left on device). ` +
      `Free space on the file system that holds it (\`df -h ${dirname(where)}\`) and start again.` +
      (fullLine ? said(output) : "")
    );
  }

  if ((code === "EACCES" || code === "EPERM") && syscall?.startsWith("spawn")) {
    return (
      `${PREFIX}: permission denied running ${path} as ${context.runAs}. The file must be executable and every folder ` +
      `above it searchable by that user, on a file system not mounted noexec (/tmp often is). ` +
      `Reinstall with \`npm ci\`, clone into another folder, or set DATABASE_URL to use another Postgres.`
    );
  }
  if (code === "ENOENT" && syscall?.startsWith("spawn")) {
    return `${PREFIX}: ${path} does not exist. Run \`npm ci\` (it installs the Postgres binaries), or set DATABASE_URL to use another Postgres.`;
  }

  const deniedLine = findLine(output, /Permission denied/, context.clusterDir);
  if (code === "EACCES" || code === "EPERM" || deniedLine) {
    const where = (deniedLine ? deniedLine.path : path) ?? context.clusterDir;
    return (
      `${PREFIX}: permission denied on ${where} (Postgres runs as ${context.runAs}). ` +
      `That user must own the cluster and reach every folder above it: check with \`namei -l ${where}\`, ` +
      `or ${startOver}.` +
      (deniedLine ? said(output) : "")
    );
  }

  if (code === "EROFS") {
    return `${PREFIX}: ${path ?? context.clusterDir} is on a read-only file system. Set SUBDATA_DATA_DIR to a writable folder, or DATABASE_URL to use another Postgres.`;
  }

  const versionLine = findLine(output, /database files are incompatible with server/, context.clusterDir);
  if (versionLine) {
    return (
      `${PREFIX}: the cluster in ${context.clusterDir} was made by another major version of PostgreSQL than the one installed. ` +
      `Delete ${context.dataDir} to start over with a new cluster (dump what you need first), or set DATABASE_URL.` +
      said(output)
    );
  }

  if (/password authentication failed for user "postgres"/.test(message ?? "")) {
    return (
      `${PREFIX}: the cluster in ${context.clusterDir} does not accept the password in ${context.dataDir}/dev.env ` +
      `(it was made with other secrets). Restore that dev.env, or ${startOver}.`
    );
  }

  return `${PREFIX} (cluster ${context.clusterDir}): ${message ?? String(error)}`;
}
