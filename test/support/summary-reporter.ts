import type { Reporter, TestModule } from "vitest/node";

/**
 * Prints one plain closing line, "N passed, N failed, N skipped", which CI tools that do
 * not know vitest's own summary can read.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<unknown>,
  ): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed++;
        else if (state === "failed") failed++;
        else skipped++;
      }
      // A file that failed outside its tests (an import, a beforeAll: its tests then show
      // as skipped) counts as one failure, so this line never reads "0 failed" for it.
      const tests = [...module.children.allTests()];
      if (module.state() === "failed" && !tests.some((t) => t.result().state === "failed")) {
        failed++;
      }
    }
    // vitest fails the run on unhandled errors; so does this line.
    failed += unhandledErrors.length;
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
