import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The failover test and the Claude Code tests have their own runs (npm run test:ha,
    // npm run test:agents).
    exclude: [...configDefaults.exclude, "test/**/*.ha.test.ts", "test/**/*.agents.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // Each file starts an embedded PostgreSQL (~3 s) and creates a PostgreSQL database.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
