import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect, it } from "vitest";
import {
  MemberChange,
  MemberStatus,
  Presence,
  SeenVia,
  TaskState,
  TaskStatus,
} from "../../gen/team/v1/enums_pb.js";
import type { TeamEvent } from "../../gen/team/v1/feed_pb.js";
import type { Member } from "../../gen/team/v1/records_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { describeEachDatabase, type TeamClient, type TestTeam } from "../support/harness.js";
import { assign, taskOf } from "../support/task-helpers.js";
import { type Watcher, watch } from "../support/team-watch.js";
import { eventually } from "../support/wait.js";

// Small windows so that each transition happens within a test: online for 2 s after a
// member is seen, idle until 4 s, offline after. The job looks every 100 ms.
const WINDOWS = { onlineS: 2, offlineS: 4, intervalMs: 100 };

/** The presence each of `name`'s presence events announced, in feed order. */
function presenceOf(events: TeamEvent[], name: string): Member[] {
  return events.flatMap((e) =>
    e.change.case === "member" &&
    e.change.value.change === MemberChange.PRESENCE &&
    e.change.value.member?.name === name
      ? [e.change.value.member]
      : [],
  );
}

const untilPresence = (w: Watcher, name: string, presence: Presence) =>
  w.until(`${name} ${Presence[presence]}`, (x) =>
    presenceOf(x.events(), name).some((m) => m.presence === presence),
  );

async function memberOf(client: TeamClient, name: string): Promise<Member> {
  const found = (await client.listMembers({})).members.find((m) => m.name === name);
  if (!found) throw new Error(`no member ${name}`);
  return found;
}

/** A client of one member that names itself in the `team-client` header. */
function clientAs(url: string, token: string, kind: string): TeamClient {
  return createClient(
    TeamService,
    createConnectTransport({
      baseUrl: url,
      httpVersion: "2",
      interceptors: [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${token}`);
          req.header.set("team-client", kind);
          return next(req);
        },
      ],
    }),
  );
}

describeEachDatabase(
  "presence: online, idle, offline",
  (env) => {
    it("a member seen once goes online, then idle, then offline, each announced once in the feed", async () => {
      const team = await env().team("alice");
      const w = watch(team.lead);
      await team.member("alice").client.listMembers({});
      await untilPresence(w, "alice", Presence.OFFLINE);
      const seen = presenceOf(w.events(), "alice");
      expect(seen.map((m) => m.presence)).toEqual([
        Presence.ONLINE,
        Presence.IDLE,
        Presence.OFFLINE,
      ]);
      // Each says what the server last saw: one plain call.
      for (const m of seen) {
        expect(m.lastSeenVia).toBe(SeenVia.RPC);
        expect(m.lastSeenAt).toBeDefined();
      }
      const listed = await memberOf(team.lead, "alice");
      expect(listed.presence).toBe(Presence.OFFLINE);
      expect(listed.lastSeenVia).toBe(SeenVia.RPC);
      w.stop();
    });

    it("ListMembers computes presence when it is read: a member just seen is online", async () => {
      const team = await env().team("alice", "bob");
      await team.member("alice").client.listMembers({});
      await eventually(async () => {
        const alice = await memberOf(team.lead, "alice");
        expect(alice.presence).toBe(Presence.ONLINE);
        expect(alice.lastSeenVia).toBe(SeenVia.RPC);
      });
      // Never seen: offline, with nothing to say how.
      const bob = await memberOf(team.lead, "bob");
      expect(bob.presence).toBe(Presence.OFFLINE);
      expect(bob.lastSeenAt).toBeUndefined();
      expect(bob.lastSeenVia).toBe(SeenVia.UNSPECIFIED);
    });

    it("says how a member was seen: the team-client header's mcp or hook, else rpc", async () => {
      const team = await env().team("via-mcp", "via-hook", "via-other");
      const url = env().server.url;
      await clientAs(url, team.member("via-mcp").token, "mcp").listMembers({});
      await clientAs(url, team.member("via-hook").token, "hook").listMembers({});
      // Not a kind the server knows: a plain call.
      await clientAs(url, team.member("via-other").token, "curl").listMembers({});
      await eventually(async () => {
        const members = (await team.lead.listMembers({})).members;
        const via = Object.fromEntries(members.map((m) => [m.name, m.lastSeenVia]));
        expect(via).toMatchObject({
          "via-mcp": SeenVia.MCP,
          "via-hook": SeenVia.HOOK,
          "via-other": SeenVia.RPC,
        });
      });
    });

    it("a member holding its inbox stream open stays online while a silent one goes offline", async () => {
      const team = await env().team("listener", "silent");
      const w = watch(team.lead);
      const abort = new AbortController();
      const stream = (async () => {
        try {
          for await (const _ of team
            .member("listener")
            .client.subscribe({}, { signal: abort.signal })) {
            // Heartbeats and messages: only the open stream matters here.
          }
        } catch {
          // Aborted at the end of the test.
        }
      })();
      await team.member("silent").client.listMembers({});
      await untilPresence(w, "silent", Presence.OFFLINE);
      // The silent member went through idle to offline meanwhile; the listener never left online.
      expect(presenceOf(w.events(), "listener").map((m) => m.presence)).toEqual([Presence.ONLINE]);
      const listener = await memberOf(team.lead, "listener");
      expect(listener.presence).toBe(Presence.ONLINE);
      expect(listener.lastSeenVia).toBe(SeenVia.STREAM);
      abort.abort();
      await stream;
      w.stop();
    });

    it("an owner offline past TASK_OWNER_TIMEOUT_S has its claimed tasks released to unowned, the lead told", async () => {
      const team = await env().team("absent");
      const w = watch(team.lead);
      const { task } = await team.lead.createTask({ subject: "Write the parser" });
      const taskId = task?.taskId ?? "";
      await team.lead.send({ to: "absent", message: assign(taskId) });
      expect((await taskOf(team.lead, taskId)).state).toBe(TaskState.CLAIMED);
      await team.member("absent").client.listMembers({});
      const notice = await eventually(
        async () => {
          const inbox = await team.lead.readInbox({});
          const found = inbox.envelopes.find(
            (e) =>
              e.message?.kind.case === "taskNotification" && e.message.kind.value.taskId === taskId,
          );
          expect(found).toBeDefined();
          return found;
        },
        { timeoutMs: 20_000, intervalMs: 200 },
      );
      const body = notice?.message?.kind.value;
      expect(notice?.from).toBe("");
      expect(body).toMatchObject({ status: TaskStatus.STOPPED, description: "absent" });
      expect((body as { summary: string }).summary).toContain("TASK_OWNER_TIMEOUT_S");
      const released = await taskOf(team.lead, taskId);
      expect(released.state).toBe(TaskState.UNOWNED);
      expect(released.owner).toBe("");
      // It was offline before its tasks went, and it is still a member: it may come back.
      expect(presenceOf(w.events(), "absent").at(-1)?.presence).toBe(Presence.OFFLINE);
      expect((await memberOf(team.lead, "absent")).status).toBe(MemberStatus.ACTIVE);
      w.stop();
    }, 30_000);
  },
  { presence: { ...WINDOWS, taskOwnerTimeoutS: 1 } },
);

describeEachDatabase(
  "presence: TASK_OWNER_TIMEOUT_S off",
  (env) => {
    it("an offline owner keeps its tasks when the timeout is off (the default)", async () => {
      const team: TestTeam = await env().team("away");
      const w = watch(team.lead);
      const { task } = await team.lead.createTask({ subject: "Keep it" });
      const taskId = task?.taskId ?? "";
      await team.lead.send({ to: "away", message: assign(taskId) });
      await team.member("away").client.listMembers({});
      await untilPresence(w, "away", Presence.OFFLINE);
      expect((await env().app.presence.runOnce()).released).toEqual([]);
      const kept = await taskOf(team.lead, taskId);
      expect(kept.state).toBe(TaskState.CLAIMED);
      expect(kept.owner).toBe("away");
      w.stop();
    });
  },
  { presence: { ...WINDOWS, taskOwnerTimeoutS: 0 } },
);
