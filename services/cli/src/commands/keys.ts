import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { AuditService } from "@subdata/proto/subdata/audit/v1/audit_service_pb";
import type { ApiKey } from "@subdata/proto/subdata/auth/v1/api_key_pb";
import { ApiKeyService } from "@subdata/proto/subdata/auth/v1/api_key_service_pb";
import { createServiceTransport, timestampToRfc3339Millis } from "@subdata/runtime";
import type { CliContext, RegisterCommands } from "../cli-context.ts";
import { CliError } from "../cli-error.ts";
import { DURATION_UNIT_MS, durationText, parseDuration } from "../option-parsers.ts";

const DEFAULT_AUTH_URL = "http://127.0.0.1:8092";

export interface AuthClients {
  apiKeys: Client<typeof ApiKeyService>;
  audit: Client<typeof AuditService>;
}

/** An RPC failure as something the user can act on (no stack, a stable code for --json). */
function cliErrorFrom(error: unknown, authUrl: string): unknown {
  if (!(error instanceof ConnectError)) return error;
  switch (error.code) {
    case Code.NotFound:
      return new CliError(error.rawMessage, "not_found");
    case Code.InvalidArgument:
      return new CliError(error.rawMessage, "invalid_argument");
    case Code.Unauthenticated:
    case Code.PermissionDenied:
      return new CliError(`the auth service refused SUBDATA_CLI_TOKEN: ${error.rawMessage}`, "config");
    case Code.Unavailable:
      return new CliError(`the auth service at ${authUrl} is unavailable (is it running? SUBDATA_AUTH_URL): ${error.rawMessage}`, "unavailable");
    default:
      return new CliError(`the auth service failed: ${error.rawMessage}`, "internal");
  }
}

/**
 * Runs `work` with typed clients of the auth service (SUBDATA_AUTH_URL, SUBDATA_CLI_TOKEN), closes
 * the HTTP/2 session afterwards so the process can exit, and turns RPC errors into CliErrors.
 */
export async function withAuthService<T>(context: CliContext, work: (clients: AuthClients) => Promise<T>): Promise<T> {
  const baseUrl = context.setting("SUBDATA_AUTH_URL") ?? DEFAULT_AUTH_URL;
  const { transport, close } = createServiceTransport({ baseUrl, serviceToken: context.requireSetting("SUBDATA_CLI_TOKEN") });
  try {
    return await work({ apiKeys: createClient(ApiKeyService, transport), audit: createClient(AuditService, transport) });
  } catch (error) {
    throw cliErrorFrom(error, baseUrl);
  } finally {
    close();
  }
}

export function timeText(timestamp: Timestamp | undefined): string | null {
  return timestamp ? timestampToRfc3339Millis(timestamp) : null;
}

function apiKeyJson(key: ApiKey) {
  return {
    id: key.id,
    merchant_id: key.merchantId,
    name: key.name,
    display_prefix: key.displayPrefix,
    created_at: timeText(key.createdAt),
    expires_at: timeText(key.expiresAt),
    revoked_at: timeText(key.revokedAt),
    last_used_at: timeText(key.lastUsedAt),
  };
}

// 100 years is "never" in practice (omit --expires-in for that); 999999w would pass the services' year 9999.
const MAX_EXPIRES_IN_MS = 36_500 * DURATION_UNIT_MS.d;

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

function keyStatus(key: ApiKey): string {
  if (key.revokedAt) return "revoked";
  if (key.expiresAt && timestampToRfc3339Millis(key.expiresAt) <= new Date().toISOString()) return "expired";
  return "active";
}

/** `subdata keys create|list|revoke`: the merchant's API keys, through the auth service. */
export const registerKeysCommands: RegisterCommands = (program, context) => {
  const keys = program.command("keys").description("create, list and revoke a merchant's API keys");

  keys
    .command("create")
    .description("create an API key; it is printed once and cannot be shown again")
    .requiredOption("--merchant <id>", "the merchant that owns the key (mer_…)")
    .option("--name <name>", "a label, at most 100 characters", "")
    .option("--expires-in <duration>", `stop working after this long: 30d, 12h, 90m, 2w; at most ${durationText(MAX_EXPIRES_IN_MS)} (default: never)`)
    .action(async (options: { merchant: string; name: string; expiresIn?: string }) => {
      const expiresInMs =
        options.expiresIn === undefined
          ? undefined
          : parseDuration(options.expiresIn, "--expires-in", {
              maxMs: MAX_EXPIRES_IN_MS,
              maxReason: "about 100 years; omit it for a key that never expires",
            });
      const expiresAt = expiresInMs === undefined ? undefined : timestampFromMs(Date.now() + expiresInMs);
      const created = await withAuthService(context, ({ apiKeys }) => apiKeys.createApiKey({ merchantId: options.merchant, name: options.name, expiresAt }));
      const apiKey = created.apiKey!;
      const warning = "Store this key now: it is shown only once and cannot be retrieved again.";
      context.output.result(
        { api_key: apiKeyJson(apiKey), key: created.key, warning },
        [
          `created ${apiKey.id} for ${apiKey.merchantId}${apiKey.expiresAt ? `, expires ${timeText(apiKey.expiresAt)}` : ""}`,
          "",
          `  ${created.key}`,
          "",
          warning,
        ].join("\n"),
      );
    });

  keys
    .command("list")
    .description("list a merchant's API keys, newest first (the keys themselves are never shown)")
    .requiredOption("--merchant <id>", "mer_…")
    .action(async (options: { merchant: string }) => {
      const all = await withAuthService(context, async ({ apiKeys }) => {
        const found: ApiKey[] = [];
        let pageToken = "";
        do {
          const page = await apiKeys.listApiKeys({ merchantId: options.merchant, pageSize: 200, pageToken });
          found.push(...page.apiKeys);
          pageToken = page.nextPageToken;
        } while (pageToken !== "");
        return found;
      });
      const text =
        all.length === 0
          ? `no API keys for ${options.merchant}`
          : table([
              ["ID", "PREFIX", "NAME", "STATUS", "CREATED", "EXPIRES", "LAST USED"],
              ...all.map((key) => [
                key.id,
                key.displayPrefix,
                key.name,
                keyStatus(key),
                timeText(key.createdAt) ?? "",
                timeText(key.expiresAt) ?? "never",
                timeText(key.lastUsedAt) ?? "never",
              ]),
            ]);
      context.output.result({ api_keys: all.map(apiKeyJson) }, text);
    });

  keys
    .command("revoke")
    .description("revoke an API key; every gateway stops accepting it within a second (idempotent)")
    .argument("<key-id>", "key_…")
    .requiredOption("--merchant <id>", "the merchant that owns the key (mer_…)")
    .action(async (apiKeyId: string, options: { merchant: string }) => {
      const revoked = await withAuthService(context, ({ apiKeys }) => apiKeys.revokeApiKey({ merchantId: options.merchant, apiKeyId }));
      const apiKey = revoked.apiKey!;
      context.output.result({ api_key: apiKeyJson(apiKey) }, `revoked ${apiKey.id} (${apiKey.displayPrefix}…) at ${timeText(apiKey.revokedAt)}`);
    });
};
