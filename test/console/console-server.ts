import { randomBytes } from "node:crypto";
import { createClient, type Client } from "@connectrpc/connect";
import { PortalSessionService } from "@subdata/proto/subdata/console/v1/portal_session_service_pb";
import { createLogger, createPool, createServiceTransport } from "@subdata/runtime";
import { inject } from "vitest";
import { createConsoleServer } from "../../services/console/src/server.ts";
import { createSessionRepository } from "../../services/console/src/session-repository.ts";

/** The console service's RPC (PortalSessionService) in-process on port 0, as its own role on this run's database. */
export interface RunningConsoleServer {
  baseUrl: string;
  serviceToken: string;
  portalSessions: Client<typeof PortalSessionService>;
  close(): Promise<void>;
}

export async function startConsoleServer(): Promise<RunningConsoleServer> {
  const pool = createPool({ connectionString: inject("roleDatabaseUrls").console, applicationName: "console-test", max: 2 });
  const serviceToken = randomBytes(24).toString("hex");
  const server = createConsoleServer({
    sessions: createSessionRepository(pool),
    publicUrl: "http://127.0.0.1:1/console",
    serviceToken,
    logger: createLogger({ name: "console-test", level: "silent" }),
  });
  const address = await server.listen("127.0.0.1", 0);
  const baseUrl = `http://127.0.0.1:${address.port}`;
  const transport = createServiceTransport({ baseUrl, serviceToken });
  return {
    baseUrl,
    serviceToken,
    portalSessions: createClient(PortalSessionService, transport.transport),
    async close() {
      transport.close();
      await server.close();
      await pool.end();
    },
  };
}
