import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { whoAmI } from "@team-protocols/client/identity.js";
import { memberStatusName } from "@team-protocols/client/names.js";
import { createTeamClient, type TeamClient } from "@team-protocols/client/team-client.js";
import type { Protocol } from "@team-protocols/client/transport.js";
import { mergeTeamHooks } from "../hooks/hooks-settings.js";
import { teamMcpConfig, thisTeam } from "../this-team.js";
import { ensureDir, paths, readSecret, stateDir, writeSecret } from "./state.js";
import { type MemberEntry, type TeamFile, TeamFileError } from "./team-file.js";

/** One member ready to start: its token is on disk, its MCP configuration written. */
export interface ReadyMember {
  entry: MemberEntry;
  token: string;
  /** Where its process runs (absolute). */
  cwd: string;
  mcpConfig: string;
  log: string;
  prompt: string;
}

export interface ReadyTeam {
  url: string;
  dir: string;
  lead: TeamClient;
  leadName: string;
  members: ReadyMember[];
  /** What was done, one line each, for the person who ran `team up`. */
  steps: string[];
}

export interface ProvisionOptions {
  url: string;
  protocol: Protocol;
  adminToken?: string;
}

/**
 * The team of the file on the server: created (its lead token saved), or reused when the
 * lead token is at hand; each member added (or revived), or reused when its saved token
 * still works. Tokens go to files of mode 0600; nothing here prints one.
 */
export async function provision(file: TeamFile, o: ProvisionOptions): Promise<ReadyTeam> {
  const url = file.url ?? o.url;
  const dir = stateDir(file.dir, file.team);
  const p = paths(dir);
  await ensureDir(dir);
  const steps: string[] = [];
  const anon = createTeamClient({ baseUrl: url, protocol: o.protocol, token: o.adminToken });
  const leadTokenFile = file.lead?.token_file
    ? resolve(file.dir, file.lead.token_file)
    : p.leadToken;
  let leadToken = await readSecret(leadTokenFile);
  if (leadToken) {
    steps.push(`team "${file.team}": reused (lead token from ${leadTokenFile})`);
  } else {
    try {
      const created = await anon.createTeam(file.team, {
        ...(file.lead?.name ? { leadName: file.lead.name } : {}),
        ...(file.lead?.permission_mode ? { leadPermissionMode: file.lead.permission_mode } : {}),
      });
      leadToken = created.token;
    } catch (err) {
      if (ConnectError.from(err).code === Code.AlreadyExists)
        throw new TeamFileError(
          `${file.path}: team "${file.team}" exists on ${url}: put its lead token in a file and name it in lead.token_file`,
        );
      throw err;
    }
    await writeSecret(leadTokenFile, `${leadToken}\n`);
    steps.push(`team "${file.team}": created (lead token in ${leadTokenFile})`);
  }
  const lead = createTeamClient({ baseUrl: url, protocol: o.protocol, token: leadToken });
  const me = await whoAmI(lead);
  if (me.role !== "lead")
    throw new TeamFileError(`${leadTokenFile}: this token is ${me.name}'s, not the lead's`);
  const existing = new Map((await lead.members()).map((m) => [m.name, m]));
  const members: ReadyMember[] = [];
  for (const entry of file.members) {
    await ensureDir(p.memberDir(entry.name));
    const saved = await readSecret(p.token(entry.name));
    const current = existing.get(entry.name);
    let token: string;
    if (current && memberStatusName(current.status) === "active") {
      if (!saved || !(await works(lead.withToken(saved))))
        throw new TeamFileError(
          `${file.path}: member "${entry.name}" is active on the server but its token is not in ${p.token(entry.name)}: run \`team down\` or \`team remove-member ${entry.name}\` first`,
        );
      token = saved;
      steps.push(`member "${entry.name}": reused`);
    } else {
      const added = await lead.addMember(entry.name, {
        ...(entry.permission_mode ? { permissionMode: entry.permission_mode } : {}),
        observer: entry.role === "observer",
      });
      token = added.token;
      await writeSecret(p.token(entry.name), `${token}\n`);
      steps.push(`member "${entry.name}": ${current ? "added again" : "added"}`);
    }
    const mcpConfig = p.mcpConfig(entry.name);
    await writeSecret(mcpConfig, `${JSON.stringify(teamMcpConfig(url, token), null, 2)}\n`);
    const cwd = resolve(file.dir, entry.cwd ?? ".");
    await mkdir(cwd, { recursive: true });
    // Claude Code is the default runtime: a member that names none gets its hooks too.
    if ((entry.runtime ?? "claude-code") === "claude-code") await installHooks(cwd);
    const prompt = entry.prompt_file
      ? await readFile(resolve(file.dir, entry.prompt_file), "utf8").catch(() => {
          throw new TeamFileError(
            `${file.path}: members.${entry.name}.prompt_file: cannot read ${entry.prompt_file}`,
          );
        })
      : (entry.prompt ?? "");
    members.push({ entry, token, cwd, mcpConfig, log: p.log(entry.name), prompt });
  }
  return { url, dir, lead, leadName: me.name, members, steps };
}

async function works(client: TeamClient): Promise<boolean> {
  return client.members().then(
    () => true,
    () => false,
  );
}

/**
 * Claude Code reads a project's hooks from .claude/settings.local.json (kept out of git):
 * merged in, the rest of the file kept. The hooks take TEAM_URL and TEAM_TOKEN from the
 * environment the supervisor gives the runtime.
 */
async function installHooks(cwd: string): Promise<void> {
  const file = join(cwd, ".claude", "settings.local.json");
  const current = await readFile(file, "utf8").then(
    (t) => JSON.parse(t) as unknown,
    () => undefined,
  );
  await mkdir(dirname(file), { recursive: true });
  await writeFile(
    `${file}.tmp`,
    `${JSON.stringify(mergeTeamHooks(current, thisTeam()), null, 2)}\n`,
  );
  await rename(`${file}.tmp`, file);
}
