import { ConfigError, env, loadConfig } from "@subdata/runtime";
import { z } from "zod";

const days = (min: number, fallback: number) => z.coerce.number().int().min(min).max(36_500).default(fallback);

/**
 * What `subdata maintain` reads. The retention of the tables it purges, and the retention of those it
 * only watches (the security log, purged by the auth service; the outbox and the change feed, purged
 * by the relay) so that its figures say when one of them is not kept: in Kubernetes all of them come
 * from the one shared ConfigMap, so every process reads the same values.
 */
export const maintainConfigShape = {
  /** The maintenance role's connection (subdata_maintain), or an owner's. */
  DATABASE_URL: env.databaseUrl(),
  /** Audit rows are kept this long, then their month's partition is dropped; never under 30. */
  SUBDATA_AUDIT_RETENTION_DAYS: days(30, 400),
  /** Months of audit partitions made ahead of the current one. */
  SUBDATA_AUDIT_PARTITIONS_AHEAD: z.coerce.number().int().min(1).max(24).default(3),
  /** Finished webhook deliveries, and attempts, are kept this long; never under 7. */
  SUBDATA_WEBHOOK_DELIVERY_RETENTION_DAYS: days(7, 90),
  /** Webhook events (what ReplayEvents replays) are kept this long; at least the feed's retention. Default: the feed's. */
  SUBDATA_WEBHOOK_EVENT_RETENTION_DAYS: z.coerce.number().int().min(30).max(36_500).optional(),
  /** The change feed's retention (the relay purges it); the webhook events' floor. */
  SUBDATA_FEED_RETENTION_DAYS: days(30, 400),
  /** The security log's retention (the auth service purges it). */
  SUBDATA_SECURITY_EVENT_RETENTION_DAYS: days(1, 90),
  /** Published outbox rows' retention (the relay purges them). */
  SUBDATA_RELAY_RETENTION_DAYS: env.positiveInt(7),
  /** A Prometheus Pushgateway to push each run's figures to (a CronJob is not scraped); unset: none. */
  SUBDATA_PUSHGATEWAY_URL: env.url().optional(),
} as const;

export interface MaintainSettings {
  databaseUrl: string;
  auditRetentionDays: number;
  auditPartitionsAhead: number;
  deliveryRetentionDays: number;
  eventRetentionDays: number;
  feedRetentionDays: number;
  securityEventRetentionDays: number;
  outboxRetentionDays: number;
  pushgatewayUrl: string | undefined;
}

/** Reads the settings through `read` (the environment, or the CLI's dev.env fallback); throws ConfigError naming each bad one. */
export function loadMaintainSettings(read: (name: string) => string | undefined): MaintainSettings {
  const source = Object.fromEntries(Object.keys(maintainConfigShape).map((name) => [name, read(name)]));
  const config = loadConfig(maintainConfigShape, source);
  const eventRetentionDays = config.SUBDATA_WEBHOOK_EVENT_RETENTION_DAYS ?? config.SUBDATA_FEED_RETENTION_DAYS;
  // A feed reader told to resynchronise replays webhooks from these events: they must last as long.
  if (eventRetentionDays < config.SUBDATA_FEED_RETENTION_DAYS) {
    throw new ConfigError([
      `SUBDATA_WEBHOOK_EVENT_RETENTION_DAYS is invalid: ${eventRetentionDays} is less than SUBDATA_FEED_RETENTION_DAYS (${config.SUBDATA_FEED_RETENTION_DAYS}); webhook events are kept at least as long as the change feed`,
    ]);
  }
  return {
    databaseUrl: config.DATABASE_URL,
    auditRetentionDays: config.SUBDATA_AUDIT_RETENTION_DAYS,
    auditPartitionsAhead: config.SUBDATA_AUDIT_PARTITIONS_AHEAD,
    deliveryRetentionDays: config.SUBDATA_WEBHOOK_DELIVERY_RETENTION_DAYS,
    eventRetentionDays,
    feedRetentionDays: config.SUBDATA_FEED_RETENTION_DAYS,
    securityEventRetentionDays: config.SUBDATA_SECURITY_EVENT_RETENTION_DAYS,
    outboxRetentionDays: config.SUBDATA_RELAY_RETENTION_DAYS,
    pushgatewayUrl: config.SUBDATA_PUSHGATEWAY_URL,
  };
}
