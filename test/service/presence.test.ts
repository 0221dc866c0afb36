import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect, it } from "vitest";
import {
  MemberChange,
  MemberStatus,
  Presence,
  RequestStatus,
  SeenVia,
  TaskState,
  TaskStatus,
} from "../../gen/team/v1/enums_pb.js";
import type { TeamEvent } from "../../gen/team/v1/feed_pb.js";
import type { Member } from "../../gen/team/v1/records_pb.js";
import { type SubscribeResponse, TeamService } from "../../gen/team/v1/team_service_pb.js";
import { releaseTasksOfAbsentOwner } from "../../server/protocols/owner-timeout.js";
import { describeEachDatabase, type TeamClient, type TestTeam } from "../support/harness.js";
import { requestRecord } from "../support/protocol-helpers.js";
import { subscribedBeyond } from "../support/subscribed.js";
import { envelopesOf, openSubscription } from "../support/subscription-reader.js";
import { assign, handoffRequest, taskOf } from "../support/task-helpers.js";
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
  },
  { presence: { ...WINDOWS, taskOwnerTimeoutS: 1 } },
);

/** Stops a stream's read at its first envelope carrying a message of this kind. */
const envelopeOf = (kind: string) => (e: SubscribeResponse) =>
  e.event.case === "envelope" && e.event.value.message?.kind.case === kind;

describeEachDatabase(
  "presence: TASK_OWNER_TIMEOUT_S",
  (env) => {
    it("an owner offline past TASK_OWNER_TIMEOUT_S has its claimed tasks released to unowned and its pending handoff canceled; the lead and the handoff's addressee hear it live", async () => {
      const team = await env().team("absent", "bob");
      const bob = team.member("bob").client;
      const w = watch(team.lead);
      const { task } = await team.lead.createTask({ subject: "Write the parser" });
      const taskId = task?.taskId ?? "";
      await team.lead.send({ to: "absent", message: assign(taskId) });
      expect((await taskOf(team.lead, taskId)).state).toBe(TaskState.CLAIMED);
      // Its last call: a handoff to bob, still pending when it goes silent.
      const handoff = await team
        .member("absent")
        .client.send({ to: "bob", message: handoffRequest(taskId) });
      // The lead's and bob's streams have read their inboxes and wait (no heartbeat for a
      // minute): what the release writes to each of them can reach it only live.
      const before = env().app.hub.waiting;
      const leadStream = openSubscription(team.lead);
      const bobStream = openSubscription(bob);
      await subscribedBeyond(env().app, before + 1);
      const toLead = await leadStream.until(envelopeOf("taskNotification"));
      const toBob = await bobStream.until(envelopeOf("requestUpdate"));
      leadStream.close();
      bobStream.close();
      for (const read of [toLead, toBob]) {
        expect(read.map((e) => e.event.case)).not.toContain("heartbeat");
      }
      expect(toLead.at(-1)?.event.value).toMatchObject({
        from: "",
        message: {
          kind: {
            value: {
              taskId,
              status: TaskStatus.STOPPED,
              description: "absent",
              summary: `Agent "absent" has been offline longer than TASK_OWNER_TIMEOUT_S: task ${JSON.stringify(taskId)} is unowned again`,
            },
          },
        },
      });
      expect(toBob.at(-1)?.event.value).toMatchObject({
        from: "",
        requestId: handoff.requestId,
        message: {
          kind: {
            value: {
              status: RequestStatus.CANCELED,
              detail: `"absent" has not been seen for too long: its task is unowned again and request ${handoff.requestId} is canceled`,
            },
          },
        },
      });
      expect((await requestRecord(team.lead, handoff.requestId)).status).toBe(
        RequestStatus.CANCELED,
      );
      // Stored as a task_notification: a search of the lead's history by that kind finds it.
      const found = await team.lead.searchMessages({ query: "unowned", kind: "task_notification" });
      expect(found.hits.map((h) => h.envelope?.seq)).toEqual([envelopesOf(toLead).at(-1)?.seq]);
      const released = await taskOf(team.lead, taskId);
      expect(released.state).toBe(TaskState.UNOWNED);
      expect(released.owner).toBe("");
      // It was offline before its tasks went, and it is still a member: it may come back.
      expect(presenceOf(w.events(), "absent").at(-1)?.presence).toBe(Presence.OFFLINE);
      expect((await memberOf(team.lead, "absent")).status).toBe(MemberStatus.ACTIVE);
      w.stop();
      // The absent owner itself is told nothing (its inbox: the assignment only).
      const own = await team.member("absent").client.readInbox({});
      expect(own.envelopes.map((e) => e.message?.kind.case)).toEqual(["taskAssign"]);
    }, 30_000);
  },
  { presence: { ...WINDOWS, taskOwnerTimeoutS: 1 }, heartbeatIntervalMs: 60_000 },
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

    it("the release takes only from an owner still absent under its row lock: one seen since keeps its tasks, one absent holding nothing releases nothing", async () => {
      // The job picks absent owners, then releases each in a transaction of its own; called
      // here directly, as that transaction would run once the member was seen meanwhile.
      const team = await env().team("back", "idle");
      const { task } = await team.lead.createTask({ subject: "Keep it" });
      const taskId = task?.taskId ?? "";
      await team.lead.send({ to: "back", message: assign(taskId) });
      await team.member("back").client.listMembers({});
      await team.member("idle").client.listMembers({});
      const rows = await env().db.query<{ id: number; name: string; team_id: number }>(
        `SELECT m.id, m.name, m.team_id FROM members m JOIN teams t ON t.id = m.team_id
         WHERE t.name = $1`,
        [team.name],
      );
      const release = (name: string, absentS: number) => {
        const m = rows.find((r) => r.name === name);
        if (!m) throw new Error(`no member ${name}`);
        return env().db.transaction((tx) =>
          releaseTasksOfAbsentOwner(tx, {
            teamId: m.team_id,
            member: { id: m.id, name: m.name },
            absentS,
          }),
        );
      };
      const nothing = { taskIds: [], aftermath: { requestIds: [], deliveries: [] } };
      // Seen within the hour: not absent by an hour's window.
      expect(await release("back", 3600)).toEqual(nothing);
      expect((await taskOf(team.lead, taskId)).owner).toBe("back");
      // Absent by a zero window, but holding no task: nothing released, nobody told.
      expect(await release("idle", 0)).toEqual(nothing);
      expect((await team.lead.readInbox({})).envelopes).toEqual([]);
    });
  },
  { presence: { ...WINDOWS, taskOwnerTimeoutS: 0 } },
);
