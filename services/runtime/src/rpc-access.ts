/**
 * Who may call which internal RPC: one row per RPC of every service, default deny. docs/security.md
 * renders this table (a test keeps the two equal), and every server enforces it (service-credential.ts).
 */

/** The internal callers, each with a credential of its own. */
export const CALLERS = ["gateway", "console", "app", "cli"] as const;
export type Caller = (typeof CALLERS)[number];

/** The variable a caller's token is sent from (`SUBDATA_GATEWAY_TOKEN`, …). */
export function callerTokenVariable(caller: Caller): string {
  return `SUBDATA_${caller.toUpperCase()}_TOKEN`;
}

/** The variable a server reads the SHA-256 of a caller's accepted tokens from (`SUBDATA_GATEWAY_TOKEN_SHA256`, …). */
export function callerHashVariable(caller: Caller): string {
  return `${callerTokenVariable(caller)}_SHA256`;
}

const ADMIN: readonly Caller[] = ["console", "app", "cli"];

/**
 * `package.Service/Method` → the callers allowed. The gateway authenticates keys, records reads and
 * reads data; creating keys, endpoints and sessions is for the console, the app and the CLI.
 */
export const RPC_ACCESS: Readonly<Record<string, readonly Caller[]>> = {
  "subdata.subscription.v1.SubscriptionService/ListSubscriptions": ["gateway"],
  "subdata.subscription.v1.SubscriptionService/GetSubscription": ["gateway"],
  "subdata.subscription.v1.SubscriptionService/ListCharges": ["gateway"],
  "subdata.order.v1.OrderService/ListOrders": ["gateway"],
  "subdata.events.v1.EventService/ListEvents": ["gateway"],
  "subdata.auth.v1.ApiKeyService/AuthenticateApiKey": ["gateway"],
  "subdata.auth.v1.ApiKeyService/RecordThrottledAuthentications": ["gateway"],
  "subdata.auth.v1.ApiKeyService/CreateApiKey": ADMIN,
  "subdata.auth.v1.ApiKeyService/ListApiKeys": ADMIN,
  "subdata.auth.v1.ApiKeyService/RevokeApiKey": ADMIN,
  "subdata.audit.v1.AuditService/RecordRead": ["gateway"],
  "subdata.audit.v1.AuditService/RecordReads": ["gateway"],
  "subdata.audit.v1.AuditService/ListAuditEvents": ADMIN,
  "subdata.webhook.v1.WebhookEndpointService/CreateEndpoint": ADMIN,
  "subdata.webhook.v1.WebhookEndpointService/ListEndpoints": ADMIN,
  "subdata.webhook.v1.WebhookEndpointService/GetEndpoint": ADMIN,
  "subdata.webhook.v1.WebhookEndpointService/UpdateEndpoint": ADMIN,
  "subdata.webhook.v1.WebhookEndpointService/DeleteEndpoint": ADMIN,
  "subdata.webhook.v1.WebhookEndpointService/RotateSecret": ADMIN,
  "subdata.webhook.v1.WebhookEndpointService/SendTestEvent": ADMIN,
  "subdata.webhook.v1.WebhookDeliveryService/ListDeliveries": ADMIN,
  "subdata.webhook.v1.WebhookDeliveryService/ListAttempts": ADMIN,
  "subdata.webhook.v1.WebhookDeliveryService/ResendEvent": ADMIN,
  "subdata.webhook.v1.WebhookDeliveryService/ReplayEvents": ADMIN,
  "subdata.webhook.v1.WebhookDeliveryService/SummarizeDeliveries": ADMIN,
  "subdata.console.v1.PortalSessionService/CreatePortalSession": ["app", "cli"],
  "subdata.console.v1.PortalSessionService/RevokePortalSession": ["app", "cli"],
};

/** Whether `caller` may call `rpc` (`package.Service/Method`); an RPC missing from the table is denied to all. */
export function mayCall(caller: Caller, rpc: string): boolean {
  return RPC_ACCESS[rpc]?.includes(caller) ?? false;
}

/** The callers some RPC of the given services allows: the credentials a server must hold. */
export function callersOf(serviceTypeNames: readonly string[]): Caller[] {
  const allowed = new Set(
    Object.entries(RPC_ACCESS)
      .filter(([rpc]) => serviceTypeNames.includes(rpc.slice(0, rpc.indexOf("/"))))
      .flatMap(([, callers]) => callers),
  );
  return CALLERS.filter((caller) => allowed.has(caller));
}

/**
 * The table as the Markdown docs/security.md carries between its `rpc-access` markers: one row per
 * RPC, one column per caller.
 */
export function renderRpcAccessTable(): string {
  const header = `| RPC | ${CALLERS.join(" | ")} |`;
  const rule = `|---|${CALLERS.map(() => ":-:").join("|")}|`;
  const rows = Object.entries(RPC_ACCESS).map(
    ([rpc, callers]) => `| \`${rpc}\` | ${CALLERS.map((caller) => (callers.includes(caller) ? "✔" : "")).join(" | ")} |`,
  );
  return [header, rule, ...rows].join("\n");
}
