import { defineConfig } from "vitest/config";

// Three projects: "unit" runs the *.test.ts next to the code (no infrastructure), "integration" runs
// test/** against real Postgres and NATS JetStream provided once per run by test/global-setup.ts;
// "faults" (npm run test:faults, not part of npm test) runs test/faults on a Postgres and NATS of its own.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: [
            "services/*/src/**/*.test.ts",
            "gateway/src/**/*.test.ts",
            "clients/*/src/**/*.test.ts",
            "deploy/*/src/**/*.test.ts",
            "deploy/k8s/**/*.test.ts",
            "deploy/observability/**/*.test.ts",
            "deploy/nats/**/*.test.ts",
            "bench/src/**/*.test.ts",
          ],
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          // The fault suite owns its own Postgres and NATS and runs on its own (npm run test:faults).
          exclude: ["test/faults/**", "**/node_modules/**"],
          globalSetup: ["test/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "faults",
          include: ["test/faults/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
