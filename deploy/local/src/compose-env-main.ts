import { fileURLToPath } from "node:url";
import { writeComposeEnv } from "./compose-env.ts";

// `npm run compose:env [path]`: deploy/.env for deploy/compose.yaml, unless another path is given.
const path = process.argv[2] ?? fileURLToPath(new URL("../../.env", import.meta.url));
const created = writeComposeEnv(path);
process.stdout.write(created.length === 0 ? `${path}: every secret was already set\n` : `${path}: generated ${created.join(", ")}\n`);
