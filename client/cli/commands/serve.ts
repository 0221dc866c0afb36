import type { Command } from "commander";

/**
 * serve: the server itself, in this process. Its flags and environment are the server's own
 * (server/config.ts parses them, `team serve --help` lists them), so they are passed on
 * untouched rather than declared twice.
 */
export function serveCommand(program: Command): void {
  program
    .command("serve")
    .summary("run the server (its flags: team serve --help)")
    .description(
      "run the server (flags and environment as in `team serve --help`: PORT, DATABASE_URL, DATA_DIR, …)",
    )
    .argument("[server-flags...]", "passed to the server")
    .helpOption(false)
    .allowUnknownOption()
    .passThroughOptions()
    .action(async (flags: string[]) => {
      // Loaded only here: the database drivers are not needed by the client commands.
      const { main } = await import("@team-protocols/server/main.js");
      await main(flags, "team serve");
    });
}
