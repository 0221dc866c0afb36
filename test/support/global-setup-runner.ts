import type { TestProject } from "vitest/node";
import setup from "./global-setup.js";

/**
 * Runs the suite's global setup alone, in a process of its own (so the environment a test
 * gives it stays there), as vitest would: `node --import tsx test/support/global-setup-runner.ts`.
 * Prints what the setup provided as one `PROVIDED {...}` line once it returns; when it
 * throws, the process fails as a vitest run does, with the error on stderr.
 */
const provided: Record<string, unknown> = {};
const project = {
  provide(key: string, value: unknown) {
    provided[key] = value;
  },
  getProvidedContext: () => provided,
} as unknown as TestProject;

const teardown = await setup(project);
process.stdout.write(`PROVIDED ${JSON.stringify(provided)}\n`);
await teardown();
