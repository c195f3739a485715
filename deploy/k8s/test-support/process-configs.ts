import { authConfigShape } from "@subdata/auth/config";
import { gatewayConfigShape } from "@subdata/gateway/config";
import { queryConfigShape } from "@subdata/query/config";
import { webhookConfigShape } from "@subdata/webhook/config";
import { relayConfigShape } from "@subdata/webhook/relay-config";
import type { z } from "zod";
import { bundlePathFor, type BundleName } from "../../build/bundle.ts";

/** A loadConfig shape: variable name → its zod schema. */
export type ConfigShape = Readonly<Record<string, z.ZodType>>;

/** Each service bundle (the CLI aside) and the config shape its entry point loads. */
const shapes: Readonly<Record<Exclude<BundleName, "subdata">, ConfigShape>> = {
  query: queryConfigShape,
  auth: authConfigShape,
  webhook: webhookConfigShape,
  relay: relayConfigShape,
  gateway: gatewayConfigShape,
};

/** Each deployable's script as the image runs it (dist/bin/<name>.mjs), with its config shape (keys are the variable names). */
export const processConfigs: Readonly<Record<string, ConfigShape>> = Object.fromEntries(
  Object.entries(shapes).map(([name, shape]) => [bundlePathFor(name), shape]),
);

/** The variables a shape cannot do without (no default): the manifests must provide every one. */
export function requiredVariables(shape: ConfigShape): string[] {
  return Object.entries(shape)
    .filter(([, schema]) => !schema.safeParse(undefined).success)
    .map(([name]) => name);
}

/** Values of the right form for the secrets the manifests take from Secrets, to load a config offline. */
export const placeholderSecrets: Readonly<Record<string, string>> = {
  DATABASE_URL: "postgres://subdata_role@postgres.example:5432/subdata",
  SUBDATA_SERVICE_TOKEN: "t".repeat(32),
  SUBDATA_PAGE_TOKEN_SECRET: "p".repeat(32),
  SUBDATA_WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString("base64"),
  // Optional keys (present during a rotation): loaded with a value, so their validation runs too.
  SUBDATA_SERVICE_TOKENS_ACCEPTED: `${"u".repeat(32)},${"v".repeat(32)}`,
  SUBDATA_PAGE_TOKEN_SECRETS_ACCEPTED: "q".repeat(32),
  SUBDATA_WEBHOOK_SECRET_KEYS_PREVIOUS: Buffer.alloc(32, 8).toString("base64"),
};
