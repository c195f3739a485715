// The console service as a library: the deploy checks read its configuration shape.
export { consoleConfigShape } from "./config.ts";
