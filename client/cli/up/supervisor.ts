import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { createBackoff, sleep } from "@team-protocols/client/backoff.js";
import { memberStatusName } from "@team-protocols/client/names.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import type { ReadyMember } from "./provision.js";
import type { MemberProcessState } from "./state.js";

/**
 * Starts each member's runtime, appends its output to its log, and restarts one that crashed
 * (a non-zero exit or a signal) after a growing delay, telling the member in its inbox (the
 * feed shows it). An exit 0, or a member the server has stopped, is not restarted.
 */

export interface Supervisor {
  readonly states: MemberProcessState[];
  /** No more restarts; SIGTERM to each process, SIGKILL after `graceMs`; resolves once all exited. */
  stop(graceMs: number): Promise<void>;
}

export interface SupervisorOptions {
  url: string;
  lead: TeamClient;
  members: ReadyMember[];
  /** Called after every change of a process's state. */
  changed(): void;
  /** One line for the person running `team up`. */
  say(line: string): void;
  restartInitialMs?: number;
  restartMaxMs?: number;
}

/** A run this long counts as healthy: the next crash restarts after the shortest delay again. */
const HEALTHY_MS = 30_000;

export function supervise(o: SupervisorOptions): Supervisor {
  let stopping = false;
  const abort = new AbortController();
  const children = new Map<string, ChildProcess>();
  const exits = new Map<string, Promise<void>>();
  const states: MemberProcessState[] = o.members.map((m) => ({
    name: m.entry.name,
    state: "starting",
    restarts: 0,
    since: new Date().toISOString(),
  }));
  const set = (s: MemberProcessState, change: Partial<MemberProcessState>) => {
    Object.assign(s, change, { since: new Date().toISOString() });
    o.changed();
  };

  const run = async (m: ReadyMember, s: MemberProcessState) => {
    const backoff = createBackoff({
      initialMs: o.restartInitialMs ?? 1_000,
      maxMs: o.restartMaxMs ?? 60_000,
    });
    for (;;) {
      const startedAt = Date.now();
      const { code, signal } = await new Promise<{
        code: number | null;
        signal: NodeJS.Signals | null;
      }>((resolve) => {
        const log = openSync(m.log, "a");
        const [command, ...args] = commandLine(m);
        const child = spawn(command as string, args, {
          cwd: m.cwd,
          env: {
            ...process.env,
            ...m.entry.env,
            TEAM_URL: o.url,
            TEAM_TOKEN: m.token,
            TEAM_MEMBER: m.entry.name,
            TEAM_MCP_CONFIG: m.mcpConfig,
          },
          stdio: ["ignore", log, log],
        });
        closeSync(log);
        children.set(m.entry.name, child);
        child.once("spawn", () => set(s, { state: "running", pid: child.pid }));
        child.once("error", (err) => {
          o.say(`${m.entry.name}: could not start: ${err.message}`);
          resolve({ code: 127, signal: null });
        });
        child.once("exit", (c, sig) => resolve({ code: c, signal: sig }));
      });
      children.delete(m.entry.name);
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      if (stopping) return set(s, { state: "stopped", pid: undefined, lastExit: how });
      if (code === 0) {
        o.say(`${m.entry.name}: exited (${how}); not restarted`);
        return set(s, { state: "exited", pid: undefined, lastExit: how });
      }
      if (await stoppedOnServer(o.lead, m.entry.name)) {
        o.say(`${m.entry.name}: exited (${how}); the server has stopped it, not restarted`);
        return set(s, { state: "exited", pid: undefined, lastExit: how });
      }
      if (Date.now() - startedAt >= HEALTHY_MS) backoff.reset();
      const delay = backoff.next();
      set(s, { state: "restarting", pid: undefined, lastExit: how, restarts: s.restarts + 1 });
      const line = `process exited (${how}); restart ${s.restarts} in ${Math.ceil(delay / 1000)} s (log: ${m.log})`;
      o.say(`${m.entry.name}: ${line}`);
      // Into the member's inbox, so the feed shows it and the restarted agent reads why.
      await o.lead.sendText(m.entry.name, `team up: your ${line}`).catch(() => undefined);
      await sleep(delay, abort.signal);
      if (stopping) return set(s, { state: "stopped" });
    }
  };

  for (const [i, m] of o.members.entries()) {
    const s = states[i] as MemberProcessState;
    exits.set(
      m.entry.name,
      run(m, s).catch((err) => o.say(`${m.entry.name}: ${err}`)),
    );
  }

  return {
    states,
    async stop(graceMs) {
      stopping = true;
      abort.abort();
      for (const child of children.values()) child.kill("SIGTERM");
      const all = Promise.all(exits.values());
      const late = await Promise.race([all.then(() => false), sleep(graceMs).then(() => true)]);
      if (late) for (const child of children.values()) child.kill("SIGKILL");
      await all;
    },
  };
}

async function stoppedOnServer(lead: TeamClient, name: string): Promise<boolean> {
  const members = await lead.members().catch(() => []);
  const m = members.find((x) => x.name === name);
  return m !== undefined && memberStatusName(m.status) !== "active";
}

/** The runtime's command line, the template's placeholders filled in. */
export function commandLine(m: ReadyMember): string[] {
  const values: Record<string, string> = {
    mcp_config: m.mcpConfig,
    prompt: m.prompt,
    name: m.entry.name,
  };
  const runtime = m.entry.runtime ?? "claude-code";
  if (runtime === "claude-code") {
    const claude = process.env.TEAM_CLAUDE ?? "claude";
    // Headless, Claude Code runs no tool it was not allowed: the team's tools are, the rest
    // follow the project's own settings.
    return [
      claude,
      "--mcp-config",
      m.mcpConfig,
      "--allowedTools",
      "mcp__team",
      "-p",
      m.prompt || `You are ${m.entry.name}.`,
    ];
  }
  const fill = (text: string, quote: (v: string) => string) =>
    text.replace(/\{(mcp_config|prompt|name)\}/g, (_, key: string) => quote(values[key] ?? ""));
  if (Array.isArray(runtime.command)) return runtime.command.map((a) => fill(a, (v) => v));
  // One string: the shell runs it, so each value goes in as one quoted word.
  return ["/bin/sh", "-c", fill(runtime.command, shellQuote)];
}

const shellQuote = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;
