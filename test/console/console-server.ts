import { createClient, type Client } from "@connectrpc/connect";
import { PortalSessionService } from "@subdata/proto/subdata/console/v1/portal_session_service_pb";
import { createLogger, createPool } from "@subdata/runtime";
import { type CallerTokens, createAllowedCallerTransport, createCallerTokens } from "@subdata/runtime/test-support";
import { inject } from "vitest";
import { createConsoleServer } from "../../services/console/src/server.ts";
import { createSessionRepository } from "../../services/console/src/session-repository.ts";

/** The console service's RPC (PortalSessionService) in-process on port 0, as its own role on this run's database. */
export interface RunningConsoleServer {
  baseUrl: string;
  /** Each caller's token (the server accepts them all; the access table decides per RPC). */
  tokens: CallerTokens["tokens"];
  portalSessions: Client<typeof PortalSessionService>;
  close(): Promise<void>;
}

export async function startConsoleServer(): Promise<RunningConsoleServer> {
  const pool = createPool({ connectionString: inject("roleDatabaseUrls").console, applicationName: "console-test", max: 2 });
  const callers = createCallerTokens();
  const server = createConsoleServer({
    sessions: createSessionRepository(pool),
    publicUrl: "http://127.0.0.1:1/console",
    callers: callers.credentials,
    logger: createLogger({ name: "console-test", level: "silent" }),
  });
  const address = await server.listen("127.0.0.1", 0);
  const baseUrl = `http://127.0.0.1:${address.port}`;
  const transport = createAllowedCallerTransport({ baseUrl, tokens: callers.tokens });
  return {
    baseUrl,
    tokens: callers.tokens,
    portalSessions: createClient(PortalSessionService, transport.transport),
    async close() {
      transport.close();
      await server.close();
      await pool.end();
    },
  };
}
