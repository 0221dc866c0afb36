import { memberRoleName, permissionModeName } from "@team-protocols/client/names.js";
import { MemberRole, type PermissionMode } from "@team-protocols/contract/team/v1/enums_pb.js";

// What the lead copies for a member it added in the console, built from the AddMember
// answer. The token is in these texts: the page shows them once, as the answer did.

/**
 * The MCP configuration of the server's own /mcp endpoint (streamable HTTP) for that member:
 * any MCP client that speaks HTTP takes it as is, from any folder. (`team mcp config` prints
 * the stdio one, which needs this machine's absolute paths.)
 */
export function httpMcpConfig(origin: string, token: string): string {
  const config = {
    mcpServers: {
      team: { type: "http", url: `${origin}/mcp`, headers: { Authorization: `Bearer ${token}` } },
    },
  };
  return JSON.stringify(config, null, 2);
}

/**
 * The member's entry for a `team up` file's `members:` list (docs/team-up.md), and where its
 * token goes so that `team up` runs this member instead of refusing it as active elsewhere.
 * `team up` runs teammates and observers; an approver has no entry (undefined).
 */
export function teamUpEntry(
  team: string,
  name: string,
  role: MemberRole,
  mode: PermissionMode,
  token: string,
): string | undefined {
  if (role !== MemberRole.TEAMMATE && role !== MemberRole.OBSERVER) return undefined;
  const lines = [`  - name: ${name}`];
  if (role === MemberRole.OBSERVER) lines.push(`    role: ${memberRoleName(role)}`);
  lines.push(`    permission_mode: ${permissionModeName(mode)}`);
  lines.push("    prompt: …");
  const dir = `.team/${team || "<team>"}/members/${name}`;
  return [
    "# in the team file, under members:",
    ...lines,
    "# and its token beside the team file, readable only by you:",
    `mkdir -p ${dir} && (umask 077 && echo '${token}' > ${dir}/token)`,
  ].join("\n");
}
