import { connect } from "@nats-io/transport-node";
import { createLogger, createPool, tracingFromEnv } from "@subdata/runtime";
import { createDeliveryPipeline, type DeliveryPipelineSettings } from "@subdata/webhook";
import { createSecretBox } from "@subdata/webhook";

// A webhook delivery pipeline in a process of its own, so a test can SIGKILL it mid-delivery.
// Env: DATABASE_URL, NATS_URL, SUBDATA_WEBHOOK_SECRET_KEY, PIPELINE_SETTINGS (JSON settings).

const settings = JSON.parse(process.env.PIPELINE_SETTINGS ?? "{}") as DeliveryPipelineSettings;
const pool = createPool({ connectionString: process.env.DATABASE_URL!, applicationName: "test-pipeline-process" });
const nats = await connect({ servers: process.env.NATS_URL! });
const logger = createLogger({ name: "pipeline-process", level: process.env.TEST_LOG_LEVEL ?? "silent" });
const pipeline = createDeliveryPipeline({
  pool,
  nats,
  secretBox: createSecretBox(process.env.SUBDATA_WEBHOOK_SECRET_KEY!),
  config: settings,
  logger,
  tracing: tracingFromEnv(process.env, "subdata-webhook", logger),
});
pipeline.start();
process.stdout.write("ready\n");
