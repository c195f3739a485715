import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { delimiter, join } from "node:path";
import { connect as connectNats, RequestError } from "@nats-io/transport-node";
import { natsAuthorizationConfig, natsInboxPrefix, type NatsPermissionSettings, type NatsUsers } from "@subdata/events";
import { spawnManaged, type ManagedProcess } from "./managed-process.ts";

/** True when a NATS server answers at `url`: it greets every TCP client with an `INFO {…}` line. */
export function natsAnswers(url: string, timeoutMs = 2_000): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname.replace(/^\[|\]$/g, ""), port: Number(port || 4222) });
    let received = "";
    const finish = (answer: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
      if (received.length >= 5) finish(received.startsWith("INFO "));
    });
    socket.on("error", () => finish(false));
    socket.on("close", () => finish(false));
  });
}

/** nats-server on PATH, else in the sbin folders distribution packages use (often not on a user's PATH). */
export function findNatsServer(path = process.env.PATH ?? ""): string | undefined {
  const folders = [...path.split(delimiter).filter(Boolean), "/usr/sbin", "/usr/local/sbin", "/usr/local/bin", "/usr/bin"];
  return folders.map((folder) => join(folder, "nats-server")).find((candidate) => existsSync(candidate));
}

export type JetStreamCheck =
  | { state: "enabled" }
  /** The server answers that it has no JetStream (for this account). */
  | { state: "disabled"; reason: string }
  /** The question got no answer: the connection was refused (credentials?) or timed out. */
  | { state: "unknown"; reason: string };

/**
 * Asks the NATS at `url` for its JetStream account info (`$JS.API.INFO`). A server started without
 * `-js` has no responder for it; one with JetStream off for this account answers with an error.
 */
async function checkJetStream(url: string, login: { user: string; pass: string }, timeoutMs = 2_000): Promise<JetStreamCheck> {
  let connection;
  try {
    // As the relay: a server with our users lets it ask; one without authentication ignores the login.
    connection = await connectNats({ servers: url, ...login, inboxPrefix: natsInboxPrefix("relay"), timeout: timeoutMs, maxReconnectAttempts: 0 });
  } catch (error) {
    return { state: "unknown", reason: `NATS at ${url} (NATS_URL) answers but refused a connection: ${(error as Error).message}` };
  }
  try {
    const reply = await connection.request("$JS.API.INFO", undefined, { timeout: timeoutMs });
    const info = reply.json<{ error?: { description?: string } }>();
    if (!info.error) return { state: "enabled" };
    return { state: "disabled", reason: `NATS at ${url} (NATS_URL) answers, but its JetStream says: ${info.error.description ?? "not enabled"}` };
  } catch (error) {
    if (error instanceof RequestError && error.isNoResponders()) {
      return {
        state: "disabled",
        reason: `NATS at ${url} (NATS_URL) answers, but without JetStream: nothing serves the JetStream API (a nats-server started without -js)`,
      };
    }
    return { state: "unknown", reason: `NATS at ${url} (NATS_URL) answers, but not to a JetStream request: ${(error as Error).message}` };
  } finally {
    await connection.close();
  }
}

export type NatsSetup =
  | { kind: "external"; url: string }
  | { kind: "started"; url: string; process: ManagedProcess; stop(): Promise<void> }
  /** No NATS answers (or none lets us in), and none could be started. */
  | { kind: "missing"; url: string; reason: string }
  /** A NATS answers without JetStream; it holds the port, so none is started there. */
  | { kind: "no-jetstream"; url: string; reason: string };

export interface EnsureNatsOptions {
  url: string;
  /** JetStream storage: `<dataDir>/nats`. */
  dataDir: string;
  /** Each process's NATS user and password: the server we start admits only these, each to its own subjects. */
  users: NatsUsers;
  /** The stream, subject prefix and consumer the permissions name. */
  permissions: NatsPermissionSettings;
  onLog(line: string): void;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/**
 * Uses the NATS at `url` when one answers with JetStream; otherwise, when nothing answers at a loopback
 * URL, starts a `nats-server` with JetStream on that port. When neither works, reports why (the
 * caller runs what it can).
 */
export async function ensureNats(options: EnsureNatsOptions): Promise<NatsSetup> {
  if (await natsAnswers(options.url)) {
    const jetStream = await checkJetStream(options.url, { user: options.users.relay.user, pass: options.users.relay.password });
    if (jetStream.state === "enabled") return { kind: "external", url: options.url };
    return { kind: jetStream.state === "disabled" ? "no-jetstream" : "missing", url: options.url, reason: jetStream.reason };
  }
  const { hostname, port } = new URL(options.url);
  if (!LOOPBACK.has(hostname)) {
    return { kind: "missing", url: options.url, reason: `no NATS answers at ${options.url} (not a local address, so none is started)` };
  }
  const binary = findNatsServer();
  if (!binary) return { kind: "missing", url: options.url, reason: `no NATS answers at ${options.url} and no nats-server is installed` };

  const storeDir = join(options.dataDir, "nats");
  mkdirSync(storeDir, { recursive: true });
  const host = hostname.replace(/^\[|\]$/g, "");
  // The users and their passwords are in the file (0600), never on a command line.
  const configPath = join(options.dataDir, "nats-server.conf");
  writeFileSync(
    configPath,
    [
      "# Written by `npm start` (deploy/local) at every start: each process's NATS user and its permissions.",
      `listen: ${JSON.stringify(`${host.includes(":") ? `[${host}]` : host}:${port || "4222"}`)}`,
      `jetstream: { store_dir: ${JSON.stringify(storeDir)} }`,
      natsAuthorizationConfig(options.permissions, options.users),
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  const recent: string[] = [];
  const server = spawnManaged({
    name: "nats",
    command: binary,
    args: ["-c", configPath],
    onLine(line) {
      recent.push(line);
      if (recent.length > 20) recent.shift();
      if (/\[(ERR|FTL|WRN)\]/.test(line)) options.onLog(line);
    },
  });
  const deadline = Date.now() + 15_000;
  while (!(await natsAnswers(options.url, 500))) {
    if (!server.running || Date.now() > deadline) {
      await server.stop(5_000);
      return { kind: "missing", url: options.url, reason: `nats-server (${binary}) did not start:\n${recent.join("\n")}` };
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    kind: "started",
    url: options.url,
    process: server,
    async stop() {
      await server.stop(10_000);
    },
  };
}

/** What to do, after the reason, when there is no usable NATS. */
export function natsHelp(setup: NatsSetup): string[] {
  const needed = "NATS JetStream is needed for events and webhooks; the webhook service and the outbox relay are skipped.";
  if (setup.kind === "no-jetstream") {
    return [
      needed,
      "  Restart that server with JetStream (nats-server -js, or `jetstream {}` in its config file),",
      `  or stop it so that npm start runs its own nats-server -js there, or point NATS_URL at a NATS with JetStream.`,
    ];
  }
  return [
    needed,
    "  Get it: apt-get install nats-server (Debian/Ubuntu), brew install nats-server (macOS),",
    "  or a binary from https://github.com/nats-io/nats-server/releases onto your PATH;",
    "  or run one: docker run -p 4222:4222 nats:2.9 -js; or point NATS_URL at one.",
  ];
}
