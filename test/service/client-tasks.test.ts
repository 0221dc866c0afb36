import { expect, it } from "vitest";
import { createTeamClient, type TeamClient, TeamError } from "../../client/index.js";
import { RequestKind, RequestStatus, TaskState } from "../../gen/team/v1/enums_pb.js";
import { describeEachDatabase, type TestEnv, uniqueName } from "../support/harness.js";

/** The client library's task helpers against the real server: what each stored. */
async function team(env: TestEnv, teammates: string[]) {
  const anon = createTeamClient({ baseUrl: env.server.url });
  const created = await anon.createTeam(uniqueName("tasks"));
  const lead = anon.withToken(created.token);
  const mates = new Map<string, TeamClient>();
  for (const name of teammates) mates.set(name, anon.withToken((await lead.addMember(name)).token));
  const mate = (name: string) => mates.get(name) as TeamClient;
  return { lead, mate };
}

const refusalOf = async (call: Promise<unknown>) =>
  TeamError.fromError(
    await call.then(
      () => undefined,
      (e) => e,
    ),
  );

describeEachDatabase("the client library: tasks", (env) => {
  it("claimTask, rejectClaim (reason), approveClaim: the claimant owns the task", async () => {
    const { lead, mate } = await team(env(), ["alice"]);
    const alice = mate("alice");
    const first = await alice.claimTask("t-1", { note: "I know it" });
    expect(first.requestId).toMatch(/^req_/);
    const blank = await refusalOf(lead.rejectClaim(first.requestId, " "));
    expect(blank.violation?.rule).toBe("reason-on-reject");
    await lead.rejectClaim(first.requestId, "not yet");
    expect((await lead.getTask("t-1")).task).toMatchObject({
      state: TaskState.UNOWNED,
      owner: "",
    });
    const second = await alice.claimTask("t-1", { ttlMs: 60_000 });
    // `to` given: no GetRequest look-up, the same answer.
    await lead.approveClaim(second.requestId, { to: "alice" });
    const got = await alice.getTask("t-1");
    expect(got.task).toMatchObject({ taskId: "t-1", state: TaskState.CLAIMED, owner: "alice" });
    expect(got.history.map((r) => [r.kind, r.status, r.from])).toEqual([
      [RequestKind.TASK_CLAIM, RequestStatus.REJECTED, "alice"],
      [RequestKind.TASK_CLAIM, RequestStatus.APPROVED, "alice"],
    ]);
    const answers = (await alice.readInbox({ afterSeq: 0 })).envelopes.map((e) => e.message?.kind);
    expect(answers).toEqual([
      {
        case: "taskClaimResponse",
        value: expect.objectContaining({ approve: false, reason: "not yet" }),
      },
      { case: "taskClaimResponse", value: expect.objectContaining({ approve: true }) },
    ]);
  });

  it("assignTask, handOffTask, rejectHandoff, acceptHandoff (to a teammate and back to the lead)", async () => {
    const { lead, mate } = await team(env(), ["alice", "bob"]);
    const assigned = await lead.assignTask("t-2", "alice", { note: "start here" });
    expect((await lead.getRequest(assigned.requestId)).status).toBe(RequestStatus.APPROVED);
    const offered = await mate("alice").handOffTask("t-2", "bob", "half done");
    await mate("bob").rejectHandoff(offered.requestId, "busy");
    expect((await lead.getTask("t-2")).task?.owner).toBe("alice");
    const again = await mate("alice").handOffTask("t-2", "bob", "still half done");
    await mate("bob").acceptHandoff(again.requestId);
    expect((await lead.getTask("t-2")).task?.owner).toBe("bob");
    const back = await mate("bob").handOffTask("t-2", "team-lead", "giving it back");
    await lead.acceptHandoff(back.requestId);
    expect((await lead.getTask("t-2")).task).toMatchObject({
      state: TaskState.UNOWNED,
      owner: "",
    });
    const answers = (await mate("alice").readInbox({ afterSeq: 0 })).envelopes
      .map((e) => e.message?.kind)
      .filter((k) => k?.case === "taskHandoffResponse")
      .map((k) => [k.value.accept, k.value.reason]);
    expect(answers).toEqual([
      [false, "busy"],
      [true, ""],
    ]);
  });

  it("requestSignoff, rejectSignoff (feedback required), approveSignoff: done; listTasks filters", async () => {
    const { lead, mate } = await team(env(), ["alice"]);
    const alice = mate("alice");
    await lead.assignTask("t-3", "alice");
    await lead.assignTask("t-4", "alice");
    const first = await alice.requestSignoff("t-3", "parser rewritten", { summary: "done" });
    const bare = await refusalOf(lead.rejectSignoff(first.requestId, ""));
    expect(bare.violation?.rule).toBe("feedback-on-reject");
    await lead.rejectSignoff(first.requestId, "add a changelog entry");
    expect((await lead.getTask("t-3")).task).toMatchObject({
      state: TaskState.CLAIMED,
      owner: "alice",
    });
    const second = await alice.requestSignoff("t-3", "parser rewritten, changelog added");
    await lead.approveSignoff(second.requestId, { feedback: "thanks" });
    expect((await lead.getTask("t-3")).task).toMatchObject({
      state: TaskState.DONE,
      owner: "alice",
    });
    const done = await lead.listTasks({ state: "done" });
    expect(done.tasks.map((t) => t.taskId)).toEqual(["t-3"]);
    const mine = await alice.listTasks({ owner: "alice" });
    expect(mine.tasks.map((t) => t.taskId).sort()).toEqual(["t-3", "t-4"]);
    const page = await lead.listTasks({ pageSize: 1 });
    expect(page.tasks).toHaveLength(1);
    expect(page.nextPageToken).not.toBe("");
    const rest = await lead.listTasks({ pageSize: 1, pageToken: page.nextPageToken });
    expect(rest.tasks.map((t) => t.taskId)).not.toEqual(page.tasks.map((t) => t.taskId));
  });
});
