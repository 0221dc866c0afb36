import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The failover test has its own run (npm run test:ha, vitest.ha.config.ts).
    exclude: [...configDefaults.exclude, "test/**/*.ha.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // Each file starts an embedded PostgreSQL (~3 s) and creates a PostgreSQL database.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
