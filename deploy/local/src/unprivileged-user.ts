import { execFileSync } from "node:child_process";

export interface OsUser {
  name: string;
  uid: number;
  gid: number;
}

function lookup(name: string): OsUser | undefined {
  try {
    const uid = Number(execFileSync("id", ["-u", name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim());
    const gid = Number(execFileSync("id", ["-g", name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim());
    return { name, uid, gid };
  } catch {
    return undefined;
  }
}

/**
 * PostgreSQL refuses to run as root. As root we run it as the `postgres` system user (present
 * wherever a Postgres package was ever installed), creating that user, without a home or a login
 * shell, when it is missing. Returns undefined when not root: Postgres runs as the current user.
 */
export function postgresOsUser(say: (line: string) => void): OsUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const existing = lookup("postgres");
  if (existing) return existing;
  say("running as root: creating the unprivileged system user `postgres` to run the embedded Postgres");
  try {
    execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"], {
      stdio: ["ignore", "ignore", "pipe"],
    });
  } catch (error) {
    throw new Error(`could not create the system user postgres (Postgres refuses to run as root): ${(error as Error).message}`);
  }
  const created = lookup("postgres");
  if (!created) throw new Error("created the system user postgres but cannot look it up");
  return created;
}
