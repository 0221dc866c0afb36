import { resolve } from "node:path";
import { instant } from "@team-protocols/client/describe.js";
import { memberStatusName, presenceName, seenViaName } from "@team-protocols/client/names.js";
import { createTeamClient, type TeamClient } from "@team-protocols/client/team-client.js";
import type { Protocol } from "@team-protocols/client/transport.js";
import type { Command } from "commander";
import {
  type ConnectionOptions,
  connectionOptions,
  DEFAULT_URL,
  duration,
  print,
  table,
  UsageError,
} from "../context.js";
import { shutDownMembers } from "../up/down.js";
import { provision } from "../up/provision.js";
import { alive, paths, readSecret, readState, stateDir, writeState } from "../up/state.js";
import { supervise } from "../up/supervisor.js";
import { readTeamFile, type TeamFile, TeamFileError } from "../up/team-file.js";

const DEFAULT_FILE = "team.yaml";

interface UpOptions extends ConnectionOptions {
  deadline: number;
}

interface DownOptions {
  deadline: number;
  force: boolean;
  protocol: Protocol;
  url: string;
  json: boolean;
}

/** `team up FILE`, `team status FILE`, `team down FILE`: a whole team from one file. */
export function upCommands(program: Command): void {
  connectionOptions(
    program
      .command("up")
      .description(
        "create (or reuse) the team of FILE, add its members, start and supervise their runtimes; Ctrl-C stops them as `team down` does",
      )
      .argument("[file]", "the team file (YAML or JSON; see docs/team-up.md)", DEFAULT_FILE)
      .option(
        "--deadline <duration>",
        "on Ctrl-C: how long members have to answer the shutdown request",
        duration,
        30_000,
      ),
    "admin",
  ).action(async (path: string, o: UpOptions) => {
    const file = await teamFile(path);
    const dir = stateDir(file.dir, file.team);
    const before = await readState(dir);
    if (before && before.supervisorPid !== process.pid && alive(before.supervisorPid))
      throw new UsageError(
        `team "${file.team}" is already up (team up is pid ${before.supervisorPid}): \`team status\` or \`team down\``,
      );
    const say = (line: string) => process.stdout.write(`${line}\n`);
    const ready = await provision(file, {
      url: o.url,
      protocol: o.protocol,
      ...(o.adminToken ? { adminToken: o.adminToken } : {}),
    });
    for (const step of ready.steps) say(step);
    let allExited: () => void = () => undefined;
    const ended = new Promise<"exited">((resolve) => {
      allExited = () => resolve("exited");
    });
    const save = () =>
      writeState(dir, {
        team: file.team,
        url: ready.url,
        supervisorPid: process.pid,
        members: supervisor.states,
      }).catch((err) => say(`could not write ${paths(dir).state}: ${err}`));
    const supervisor = supervise({
      url: ready.url,
      lead: ready.lead,
      members: ready.members,
      say,
      changed: () => {
        void save();
        if (supervisor?.states.every((s) => s.state === "exited" || s.state === "stopped"))
          allExited();
      },
    });
    await save();
    say(
      `team "${file.team}" is up on ${ready.url}: ${ready.members.length} member(s); logs in ${dir}/members/*/log\n` +
        "  team status to see them; team console for a link into the web console as the lead; team down (or Ctrl-C) to stop them",
    );
    const signalled = new Promise<"signal">((resolve) => {
      let count = 0;
      for (const signal of ["SIGINT", "SIGTERM"] as const)
        process.on(signal, () => {
          // A second Ctrl-C (or npm's forwarded one) must not cut the stop short.
          if (count++ === 0) resolve("signal");
          else say("still stopping: waiting for the members' answers");
        });
    });
    const why = await Promise.race([signalled, ended]);
    if (why === "signal") {
      say(`stopping team "${file.team}": asking each member to stop`);
      const results = await shutDownMembers(
        ready.lead,
        ready.members.map((m) => m.entry.name),
        { deadlineMs: o.deadline, force: false, reason: "team down" },
      );
      for (const r of results) say(`${r.name}: ${r.outcome}`);
    } else say("every member's process has exited");
    await supervisor.stop(10_000);
    await save();
    say(`team "${file.team}" is down`);
  });

  const status = program
    .command("status")
    .description("the members of FILE's team: process, last seen, pending requests, tasks held")
    .argument("[file]", "the team file", DEFAULT_FILE)
    .option("--watch", "redraw every 2 seconds until Ctrl-C", false);
  connectionOptions(status, "admin").action(
    async (path: string, o: ConnectionOptions & { watch: boolean }) => {
      const file = await teamFile(path);
      const lead = await leadClient(file, o);
      for (;;) {
        const rows = await statusRows(file, lead);
        if (o.watch) process.stdout.write("\x1b[2J\x1b[H");
        print(
          o,
          () =>
            table(
              [
                "NAME",
                "PROCESS",
                "PID",
                "RESTARTS",
                "MEMBER",
                "PRESENCE",
                "LAST SEEN",
                "PENDING",
                "TASKS",
              ],
              rows.map((r) => [
                r.name,
                r.process,
                r.pid ? String(r.pid) : "-",
                String(r.restarts),
                r.member,
                r.presence,
                r.lastSeenVia === "-" ? r.lastSeen : `${r.lastSeen} (${r.lastSeenVia})`,
                String(r.pending),
                String(r.tasks),
              ]),
            ),
          () => ({ team: file.team, members: rows }),
        );
        if (!o.watch) return;
        await new Promise((r) => setTimeout(r, 2_000));
      }
    },
  );

  consoleCommand(program);

  const down = program
    .command("down")
    .description(
      "ask every member of FILE's team to stop (the shutdown protocol), wait for the answers, stop the processes",
    )
    .argument("[file]", "the team file", DEFAULT_FILE)
    .option("--deadline <duration>", "how long members have to answer", duration, 30_000)
    .option("--force", "remove (RemoveMember) the members that did not agree in time", false);
  connectionOptions(down, "admin").action(async (path: string, o: DownOptions) => {
    const file = await teamFile(path);
    const dir = stateDir(file.dir, file.team);
    const lead = await leadClient(file, o);
    const results = await shutDownMembers(
      lead,
      file.members.map((m) => m.name),
      { deadlineMs: o.deadline, force: o.force, reason: "team down" },
    );
    const state = await readState(dir);
    let processes = "no team up running";
    if (state && alive(state.supervisorPid)) {
      // team up stops its processes on SIGTERM (and asks nobody again: they have answered).
      process.kill(state.supervisorPid, "SIGTERM");
      const deadline = Date.now() + o.deadline + 20_000;
      while (alive(state.supervisorPid) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 200));
      processes = alive(state.supervisorPid)
        ? `team up (pid ${state.supervisorPid}) has not exited yet`
        : "processes stopped";
    } else if (state) {
      // team up is gone: its children may not be.
      for (const m of state.members) if (alive(m.pid)) process.kill(m.pid as number, "SIGTERM");
      processes = "leftover processes signalled";
    }
    print(
      o,
      () => [...results.map((r) => `${r.name}: ${r.outcome}`), processes].join("\n"),
      () => ({ members: results, processes }),
    );
  });
}

/** `team console FILE`: a link that signs a browser tab into the web console. */
function consoleCommand(program: Command): void {
  connectionOptions(
    program
      .command("console")
      .description(
        "print a link that signs a browser tab into the web console as FILE's lead (or --member NAME): the token rides in the link's #fragment, which browsers never send",
      )
      .argument("[file]", "the team file", DEFAULT_FILE)
      .option("--member <name>", "sign in as this member of the file instead of the lead"),
    "admin",
  ).action(async (path: string, o: { url: string; member?: string }) => {
    const file = await teamFile(path);
    const dir = stateDir(file.dir, file.team);
    const tokenFile = o.member
      ? paths(dir).token(o.member)
      : file.lead?.token_file
        ? resolve(file.dir, file.lead.token_file)
        : paths(dir).leadToken;
    const token = await readSecret(tokenFile);
    if (!token)
      throw new UsageError(`no token in ${tokenFile}: run \`team up ${file.path}\` first`);
    const state = await readState(dir);
    const url = (file.url ?? state?.url ?? o.url ?? DEFAULT_URL).replace(/\/$/, "");
    process.stdout.write(`${url}/#token=${encodeURIComponent(token)}\n`);
  });
}

async function teamFile(path: string): Promise<TeamFile> {
  try {
    return await readTeamFile(path);
  } catch (err) {
    if (err instanceof TeamFileError) throw new UsageError(err.message);
    throw err;
  }
}

/** The lead, from the token `team up` saved (or the file's lead.token_file). */
async function leadClient(
  file: TeamFile,
  o: { url: string; protocol: Protocol },
): Promise<TeamClient> {
  const dir = stateDir(file.dir, file.team);
  const tokenFile = file.lead?.token_file
    ? resolve(file.dir, file.lead.token_file)
    : paths(dir).leadToken;
  const token = await readSecret(tokenFile);
  if (!token)
    throw new UsageError(`no lead token in ${tokenFile}: run \`team up ${file.path}\` first`);
  const state = await readState(dir);
  const url = file.url ?? state?.url ?? o.url ?? DEFAULT_URL;
  return createTeamClient({ baseUrl: url, token, protocol: o.protocol });
}

interface StatusRow {
  name: string;
  process: string;
  pid?: number;
  restarts: number;
  member: string;
  /** online, idle or offline, as the server computes it ("-" for a member not in the team). */
  presence: string;
  lastSeen: string;
  /** How the server last saw it: stream, mcp, hook or rpc ("-" if never). */
  lastSeenVia: string;
  pending: number;
  tasks: number;
}

async function statusRows(file: TeamFile, lead: TeamClient): Promise<StatusRow[]> {
  const state = await readState(stateDir(file.dir, file.team));
  const supervised = state !== undefined && alive(state.supervisorPid);
  const [members, requests, tasks] = await Promise.all([
    lead.members(),
    lead.listRequests({ status: "pending", pageSize: 1000 }),
    lead.listTasks({ state: "claimed", pageSize: 1000 }),
  ]);
  return file.members.map((entry) => {
    const p = state?.members.find((s) => s.name === entry.name);
    const m = members.find((x) => x.name === entry.name);
    return {
      name: entry.name,
      process: p ? (supervised || p.state !== "running" ? p.state : "unsupervised") : "not started",
      ...(p?.pid ? { pid: p.pid } : {}),
      restarts: p?.restarts ?? 0,
      member: m ? memberStatusName(m.status) : "absent",
      presence: m ? presenceName(m.presence) : "-",
      lastSeen: m ? instant(m.lastSeenAt) : "-",
      lastSeenVia: m?.lastSeenVia ? seenViaName(m.lastSeenVia) : "-",
      pending: requests.requests.filter((r) => r.to === entry.name).length,
      tasks: tasks.tasks.filter((t) => t.owner === entry.name).length,
    };
  });
}
