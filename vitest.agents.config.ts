import { defineConfig } from "vitest/config";

// `npm run test:agents`: the real Claude Code (scripts/install-claude-code.sh installs it into
// a cache folder first) against a scripted Messages API on loopback and a real server.
export default defineConfig({
  test: {
    include: ["test/agents/**/*.agents.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // Each test runs Claude Code (a native binary that starts in a second or two) several times.
    testTimeout: 240_000,
    hookTimeout: 60_000,
    pool: "forks",
    // One file at a time: each claude run is a heavy process on a 2-core machine.
    fileParallelism: false,
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
