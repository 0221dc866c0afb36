import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Identity } from "@team-protocols/client/identity.js";
import { memberRoleName, memberStatusName } from "@team-protocols/client/names.js";
import { roleDuties } from "@team-protocols/client/role-duties.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";

/** The `teammate` and `team-lead` prompts: a role's duties, with the team as it is now. */
export function registerTeamPrompts(server: McpServer, client: TeamClient, me: Identity): void {
  const roster = async () =>
    (await client.members())
      .map((m) => `- ${m.name} (${memberRoleName(m.role)}, ${memberStatusName(m.status)})`)
      .join("\n");
  const message = (text: string) => ({
    messages: [{ role: "user" as const, content: { type: "text" as const, text } }],
  });

  server.registerPrompt(
    "teammate",
    { description: "Your duties as a teammate of this team, and its members." },
    async () =>
      message(
        [
          `You are ${me.name}, a teammate. The team:`,
          await roster(),
          "",
          "Duties:",
          ...roleDuties("teammate"),
        ].join("\n"),
      ),
  );
  server.registerPrompt(
    "team-lead",
    { description: "Your duties as the team's lead, and its members." },
    async () =>
      message(
        [
          `You are ${me.name}, the team lead. The team:`,
          await roster(),
          "",
          "Duties:",
          ...roleDuties("lead"),
        ].join("\n"),
      ),
  );
}
