import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";

const root = fileURLToPath(new URL(".", import.meta.url));

/**
 * `npm run test:mutation` (stryker.config.json): the fast tests that guard the rules table,
 * the protocols, the send rate and the stream caps, and only those, so one Stryker run over
 * them takes minutes. Stryker runs them in a copy of the repository; the workspace packages
 * are aliased to that copy's folders, or a test's `../../gen` and the server's
 * `@team-protocols/contract` would load two copies of the contract (node_modules is a link
 * back to the original) and no descriptor would be identical to the other's.
 */
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@team-protocols\/contract\/(.*)\.js$/, replacement: `${root}gen/$1.ts` },
      { find: /^@team-protocols\/server\/(.*)\.js$/, replacement: `${root}server/$1.ts` },
      { find: /^@team-protocols\/client$/, replacement: `${root}client/index.ts` },
      { find: /^@team-protocols\/client\/(.*)\.js$/, replacement: `${root}client/$1.ts` },
    ],
  },
  test: {
    include: [
      // the rules table and the send rate
      "test/unit/rules-table.test.ts",
      "test/service/send-rate.test.ts",
      // the stream caps (subscriptions-per-member, watches-per-member)
      "test/wire/stream-limits.test.ts",
      // the protocols: their flows and their stateful rules, end to end on a real database
      "test/service/protocol-flows.test.ts",
      "test/service/protocol-rules.test.ts",
      "test/service/requests.test.ts",
      "test/service/request-deadlines.test.ts",
      "test/service/task-flows.test.ts",
      "test/service/task-rules.test.ts",
      "test/service/task-deadlines.test.ts",
      "test/service/task-list-flows.test.ts",
      "test/service/task-list-rules.test.ts",
    ],
    exclude: [...configDefaults.exclude],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
