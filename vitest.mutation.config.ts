import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";

const root = fileURLToPath(new URL(".", import.meta.url));

/**
 * `npm run test:mutation` (stryker.config.json): the fast tests that guard the rules table,
 * the protocols, the send rate and the stream caps, and only those, so one Stryker run over
 * them takes minutes. A test file must be listed here to run at all: Stryker's `-t` only
 * narrows this list. Stryker runs them in a copy of the repository; the workspace packages
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
      // the task list's locks: dependency changes, creations and completions racing
      // (task-list.ts's task-graph lock and row locks)
      "test/service/task-list-races.test.ts",
      // the approver's answers on the lead's behalf (on-behalf.ts, permission.ts) and leases
      "test/service/permission-approver.test.ts",
      "test/service/leases.test.ts",
      // a lapsed lease the sweeper has not reached, then swept and its holder told
      // (leases.ts's expireLeases, expiry-sweeper.ts)
      "test/service/lease-expiry-unswept.test.ts",
      // the journal line each protocol step writes (cancel.ts's cancel_request, …)
      "test/service/attempts-journal.test.ts",
      // TASK_OWNER_TIMEOUT_S: an absent owner's tasks released (owner-timeout.ts)
      "test/service/presence.test.ts",
      // the feed's task events, each move as it left the task (task-ownership.ts's
      // moveTaskAndSettle)
      "test/service/watch-tasks.test.ts",
    ],
    exclude: [...configDefaults.exclude],
    globalSetup: ["test/support/global-setup.ts"],
    // PostgreSQL only (test/support/databases.ts): a mutant behaves the same on both
    // databases, and the embedded one would add a PGlite start per test file per mutant.
    // The mutation run therefore needs PostgreSQL (TEST_DATABASE_URL, or 127.0.0.1:5432).
    env: { TEST_DATABASE_KINDS: "postgres" },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // One module graph for all the files of a run: Stryker runs one vitest run per mutant
    // (in one worker, maxWorkers 1), and with isolation each test file would import the
    // server, the contract and connect again, seconds a file on the shared machine. The
    // listed files change no globals (no vi.mock, fake timers or stubbed env); each starts
    // its own server and database.
    isolate: false,
  },
});
