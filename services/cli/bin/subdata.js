#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx (the dev loop has no build step; the image runs the
// bundle dist/bin/subdata.mjs instead), from any working directory.
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
