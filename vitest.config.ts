import { defineConfig } from "vitest/config";

// Two projects: "unit" runs the *.test.ts next to the code (no infrastructure), "integration" runs
// test/** against real Postgres and NATS JetStream provided once per run by test/global-setup.ts.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["services/*/src/**/*.test.ts", "gateway/src/**/*.test.ts", "deploy/*/src/**/*.test.ts", "deploy/k8s/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          globalSetup: ["test/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
