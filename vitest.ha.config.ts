import { defineConfig } from "vitest/config";

/**
 * `npm run test:ha`: the database failover test (test/*.ha.test.ts), apart from `npm test`
 * because it builds a pg_auto_failover formation (a monitor and three PostgreSQL nodes) and
 * kills machines of it for minutes. .ci/run runs it after `npm test`.
 */
export default defineConfig({
  test: {
    include: ["test/**/*.ha.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 240_000,
    pool: "forks",
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
