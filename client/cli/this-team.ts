import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * How this very CLI is started, by absolute paths, so a hook, an MCP configuration or a
 * supervised agent reaches it from any working directory.
 */
export const teamBin = (): string => resolve(dirname(fileURLToPath(import.meta.url)), "bin.js");

/** `node /abs/path/bin/team.js`, spelled for a shell command line. */
export const thisTeam = (): string =>
  `${JSON.stringify(process.execPath)} ${JSON.stringify(teamBin())}`;

/** The stdio MCP configuration of `team mcp` for one member (absolute paths). */
export function teamMcpConfig(url: string, token: string): unknown {
  return {
    mcpServers: {
      team: {
        command: process.execPath,
        args: [teamBin(), "mcp"],
        env: { TEAM_URL: url, TEAM_TOKEN: token },
      },
    },
  };
}
