import { configDefaults, defineConfig } from "vitest/config";

/**
 * `npm test`: every suite that runs inside the test process (a server, a client, the
 * databases). The suites that start other programs (the CLI, the server as a process,
 * chromium, h2load, the demo) are `npm run test:process` (vitest.process.config.ts); the
 * failover test and the Claude Code tests have their own runs too (npm run test:ha,
 * npm run test:agents). .ci/run runs all four.
 */
export const PROCESS_SUITES = ["test/process/**/*.test.ts", "test/docs/demo.test.ts"];

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [
      ...configDefaults.exclude,
      "test/**/*.ha.test.ts",
      "test/**/*.agents.test.ts",
      ...PROCESS_SUITES,
    ],
    globalSetup: ["test/support/global-setup.ts"],
    // Each file starts an embedded PostgreSQL (~3 s) and creates a PostgreSQL database.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
