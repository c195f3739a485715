#!/usr/bin/env node
// Runs the TypeScript mirror directly through tsx (no build step), from any working directory.
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
