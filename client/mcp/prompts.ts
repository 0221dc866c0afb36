import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Identity } from "@team-protocols/client/identity.js";
import { memberRoleName, memberStatusName } from "@team-protocols/client/names.js";
import { roleDuties } from "@team-protocols/client/role-duties.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";

/** The caller's role's prompt (`teammate`, `team-lead`, ...): its duties, with the team as it is now. */
export function registerTeamPrompts(server: McpServer, client: TeamClient, me: Identity): void {
  const roster = async () =>
    (await client.members())
      .map((m) => `- ${m.name} (${memberRoleName(m.role)}, ${memberStatusName(m.status)})`)
      .join("\n");
  const message = (text: string) => ({
    messages: [{ role: "user" as const, content: { type: "text" as const, text } }],
  });

  // One prompt, the caller's own role's, named as Claude Code's agent teams name the roles;
  // a role added to the contract gets its word as its prompt's name.
  const name = me.role === "lead" ? "team-lead" : me.role;
  const who = me.role === "lead" ? "the team lead" : `a ${me.role}`;
  server.registerPrompt(
    name,
    { description: `Your duties as ${who} of this team (you are ${me.name}), and its members.` },
    async () =>
      message(
        [
          `You are ${me.name}, ${who}. The team:`,
          await roster(),
          "",
          "Duties:",
          ...roleDuties(me.role),
        ].join("\n"),
      ),
  );
}
