// Bundled by docker-files.test.ts: a bundle that throws at once, whose stack trace must name this file.
throw new Error("thrown from the TypeScript source");
