import { configDefaults, defineConfig } from "vitest/config";
import base, { PROCESS_SUITES } from "./vitest.config.js";

/**
 * `npm run test:process`: the suites that start other programs — the `team` CLI and
 * `team up`, the server as a process (kill -9, restarts, backup and restore, npm start), the
 * console in chromium, the bench's smoke run with h2load, the packed install, the demo. Apart
 * from `npm test` only to keep each run short; .ci/run runs it after `npm test`.
 */
export default defineConfig({
  test: {
    ...base.test,
    include: PROCESS_SUITES,
    exclude: [...configDefaults.exclude, "test/**/*.ha.test.ts", "test/**/*.agents.test.ts"],
  },
});
