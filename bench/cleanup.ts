/**
 * What the run must undo however it ends (normally, by an error, or by Ctrl-C): the server
 * process, scratch databases, temporary folders. Undone in reverse order of creation, each
 * step on its own so that one failure does not leave the rest behind.
 */
export class Cleanups {
  private readonly steps: { what: string; run: () => Promise<void> }[] = [];
  private running: Promise<void> | undefined;

  add(what: string, run: () => Promise<void>): void {
    this.steps.push({ what, run });
  }

  /** Runs every step once, newest first; later calls wait for the first. */
  runAll(log: (line: string) => void): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.splice(0).reverse()) {
        try {
          await step.run();
        } catch (err) {
          log(`cleanup: could not ${step.what}: ${(err as Error).message}`);
        }
      }
    })();
    return this.running;
  }
}
