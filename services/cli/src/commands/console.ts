import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { PortalSessionService } from "@subdata/proto/subdata/console/v1/portal_session_service_pb";
import { createServiceTransport } from "@subdata/runtime";
import type { RegisterCommands } from "../cli-context.ts";
import { CliError } from "../cli-error.ts";
import { DURATION_UNIT_MS, parseDuration } from "../option-parsers.ts";
import { timeText } from "./keys.ts";

const DEFAULT_CONSOLE_URL = "http://127.0.0.1:8095";

/** `subdata console open`: what the app does to send a user to the page, for development. */
export const registerConsoleCommands: RegisterCommands = (program, context) => {
  const consoleCommand = program.command("console").description("the merchant's API & integrations page");

  consoleCommand
    .command("open")
    .description("mint a portal session for a merchant and print its one-time URL (open it within 5 minutes)")
    .requiredOption("--merchant <id>", "the merchant whose page to open (mer_…)")
    .option("--user <id>", "who the session is for, as the app would name its user", "developer")
    .option("--user-name <name>", "a display name for that user", "Developer (subdata CLI)")
    .option("--ttl <duration>", "how long the session lasts: 30m, 2h; 1m to 12h", "1h")
    .action(async (options: { merchant: string; user: string; userName: string; ttl: string }) => {
      const ttlMs = parseDuration(options.ttl, "--ttl", { units: ["m", "h"], maxMs: 12 * DURATION_UNIT_MS.h, maxReason: "12 hours" });
      const baseUrl = context.setting("SUBDATA_CONSOLE_URL") ?? DEFAULT_CONSOLE_URL;
      const { transport, close } = createServiceTransport({ baseUrl, serviceToken: context.requireSetting("SUBDATA_CLI_TOKEN") });
      try {
        const created = await createClient(PortalSessionService, transport).createPortalSession({
          merchantId: options.merchant,
          userId: options.user,
          userName: options.userName,
          ttl: create(DurationSchema, { seconds: BigInt(Math.floor(ttlMs / 1000)) }),
        });
        const session = created.portalSession!;
        context.output.result(
          { portal_session: { id: session.id, merchant_id: session.merchantId, expires_at: timeText(session.expiresAt) }, url: created.url },
          [
            `${created.url}`,
            "",
            `one-time link for ${session.merchantId} (session ${session.id}, until ${timeText(session.expiresAt)}); open it within 5 minutes`,
          ].join("\n"),
        );
      } catch (error) {
        if (!(error instanceof ConnectError)) throw error;
        if (error.code === Code.NotFound) throw new CliError(error.rawMessage, "not_found");
        if (error.code === Code.InvalidArgument) throw new CliError(error.rawMessage, "invalid_argument");
        if (error.code === Code.Unavailable) {
          throw new CliError(`the console service at ${baseUrl} is unavailable (is it running? SUBDATA_CONSOLE_URL): ${error.rawMessage}`, "unavailable");
        }
        throw new CliError(`the console service failed: ${error.rawMessage}`, "internal");
      } finally {
        close();
      }
    });
};
