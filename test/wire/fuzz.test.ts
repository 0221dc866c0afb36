import { randomInt } from "node:crypto";
import http from "node:http";
import { gzipSync } from "node:zlib";
import { type DescMethod, fromBinary, fromJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TaskProgress } from "../../gen/team/v1/enums_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { rules } from "../../server/interceptors/rules/table.js";
import {
  type Credential,
  type FuzzCase,
  type FuzzWorld,
  M,
  makeCase,
  STORM_METHODS,
} from "../support/fuzz-inputs.js";
import { describeEachDatabase, type Protocol } from "../support/harness.js";
import { planRequest, planResponse, shutdownRequest, text } from "../support/protocol-helpers.js";
import {
  codeName,
  envelope,
  H2Client,
  h1Request,
  hasCompleteFrame,
  judgeConnectStream,
  judgeConnectUnary,
  judgeGrpc,
  judgeGrpcWeb,
  type RawOutcome,
  type RawRequest,
  type Verdict,
} from "../support/raw-rpc.js";
import {
  assign,
  claimRequest,
  handoffRequest,
  signoffRequest,
  signoffResponse,
} from "../support/task-helpers.js";
import {
  describeDiff,
  diffSnapshots,
  snapshotTeam,
  type TeamDiff,
  type TeamSnapshot,
} from "../support/team-snapshot.js";

/**
 * Hostile input (issue 6): thousands of random and mutated requests to every TeamService RPC,
 * over Connect (JSON and protobuf, HTTP/1.1 and HTTP/2), gRPC and gRPC-Web, written byte for
 * byte. Each must get an HTTP response that is a well-formed Connect/gRPC error with a code
 * other than Internal/Unknown (or a success, for the mutated requests that are still valid);
 * the server must stay up; and team A's stored rows may change only as the successful calls
 * explain (SQL snapshot before and after, checked against what each success returned).
 *
 *   FUZZ_SEED=<n>   replay a run (the seed is printed)
 *   FUZZ_COUNT=<n>  requests per database kind (default 1500)
 *   FUZZ_CASE=<i>   run only case i of the seed, and print it
 *
 * Every error the server logs (Internal, Unavailable) is a finding: no known bug tolerated.
 */

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : randomInt(2 ** 31);
const COUNT = Number(process.env.FUZZ_COUNT ?? 1500);
const ONLY = process.env.FUZZ_CASE === undefined ? undefined : Number(process.env.FUZZ_CASE);
const CONCURRENCY = 8;

// Server-side errors (Internal, Unavailable) are logged at level error: collect them.
const serverErrors: { method?: string; code?: string; msg?: string; err?: { message?: string } }[] =
  [];
const logger = pino(
  { level: "error" },
  {
    write(line: string) {
      serverErrors.push(JSON.parse(line));
    },
  },
);

// ---------------------------------------------------------------------------------------
// Bugs this test found, all fixed; each keeps a test of its own below. None is tolerated:
// an Internal answer or a logged server error fails the storm.

// K7 (fixed): a call whose error message is huge. connect-es echoes the offending JSON value
// in the parse error (unbounded). Every error message a server writes is now capped at 1 KiB
// inside connect-es, before it is serialized or compressed (patches/, see
// test/wire/connect-error-echo.test.ts); and a response sent before the request body is in no
// longer loses the race with a connection closed on unread bytes ("response aborted"): the
// rest of the body is read and dropped (server/http/oversized-request-bodies.ts).
//
// K1, K2, K6 (fixed): undecodable requests (a protobuf that does not parse, a compressed
// envelope without an encoding, a truncated gzip body) were Internal; connect-es now answers
// InvalidArgument where it decodes them (patches/), so no call logs them as our fault.

// ---------------------------------------------------------------------------------------

function decodeRequest(method: DescMethod, bytes: Buffer, binary: boolean): unknown {
  try {
    return binary
      ? fromBinary(method.input, bytes)
      : // As the server reads JSON: a leading BOM dropped, unknown fields ignored.
        fromJsonString(method.input, new TextDecoder().decode(bytes), {
          ignoreUnknownFields: true,
        });
  } catch {
    return undefined;
  }
}

function decodeResponse(method: DescMethod, v: Verdict): unknown {
  if (v.kind !== "success" || v.messages.length === 0) return undefined;
  try {
    const data = v.messages[0] as Buffer;
    return v.binary
      ? fromBinary(method.output, data)
      : fromJsonString(method.output, data.toString("utf8"));
  } catch {
    return undefined;
  }
}

const judge = (c: FuzzCase, res: Extract<RawOutcome, { kind: "response" }>): Verdict =>
  c.judge === "connect-unary"
    ? judgeConnectUnary(res)
    : c.judge === "connect-stream"
      ? judgeConnectStream(res)
      : c.judge === "grpc-web"
        ? judgeGrpcWeb(res)
        : judgeGrpc(res);

const hex = (b: Buffer) =>
  b.length <= 96
    ? b.toString("hex")
    : `${b.subarray(0, 96).toString("hex")}... (${b.length} bytes)`;

function describeCase(c: FuzzCase): string {
  const headers = Object.entries(c.headers)
    .map(([k, v]) => `${k}: ${k === "authorization" ? `${v.slice(0, 14)}...` : v.slice(0, 60)}`)
    .join("; ");
  return (
    `seed ${SEED} case ${c.index}: ${c.method.name} over ${c.transport} as ${c.credential}` +
    `${c.chunked ? " (chunked)" : ""} [${c.notes.join(", ") || "unmutated"}] ${c.path} ` +
    `{${headers}} body ${hex(c.body)}`
  );
}

const verdictText = (v: Verdict) =>
  v.kind === "error"
    ? `${codeName(v.code)}: ${v.message.slice(0, 160)}`
    : v.kind === "http"
      ? `HTTP ${v.status}`
      : v.kind;

// Ids of every rule (the table's and the store's): a refused credential reaches none of them.
const RULE_IDS = [
  ...rules.map((r) => r.id),
  "known-recipient",
  "unknown-request",
  "addressee-only",
  "response-to-requester",
  "once-only",
  "requester-only",
  "one-owner",
  "task-done",
  "owner-only-handoff",
  "owner-only-signoff",
  "task-visibility",
];
const READ_ONLY = new Set<DescMethod>([
  M.listMembers,
  M.subscribe,
  M.getRequest,
  M.listRequests,
  M.awaitRequest,
  M.listAttempts,
  M.getTask,
  M.listTasks,
  M.listLeases,
  M.getThread,
  M.listThreads,
  M.searchMessages,
]);
const BAD_CREDENTIALS: Credential[] = ["revoked", "unknown", "malformed", "missing", "basic"];
const CALLER_NAME: Partial<Record<Credential, string>> = { lead: "team-lead", worker: "worker" };

interface Success {
  c: FuzzCase;
  // biome-ignore lint/suspicious/noExplicitAny: decoded request and response of any method.
  request: any;
  // biome-ignore lint/suspicious/noExplicitAny: decoded request and response of any method.
  response: any;
}

interface StormResult {
  sent: number;
  findings: string[];
  successes: Success[];
  /** method -> verdict -> count */
  histogram: Map<string, Map<string, number>>;
  ms: number;
}

// ---------------------------------------------------------------------------------------
// What the successful calls explain, compared with what changed in team A's rows.

/** The message cases that open a request, and those that answer one. */
const OPENING_CASES = [
  "shutdownRequest",
  "planApprovalRequest",
  "taskClaimRequest",
  "taskAssign",
  "taskHandoffRequest",
  "resultSignoffRequest",
];
const ANSWER_CASES = [
  "shutdownResponse",
  "planApprovalResponse",
  "taskClaimResponse",
  "taskHandoffResponse",
  "resultSignoffResponse",
];
/** An answer's yes (a handoff's is `accept`). */
const saysYes = (s: Success): boolean => {
  const v = s.request.message.kind.value;
  return Boolean(v.approve ?? v.accept);
};

function unexplainedChanges(
  before: TeamSnapshot,
  after: TeamSnapshot,
  diff: TeamDiff,
  successes: Success[],
  now: Date,
): string[] {
  const out: string[] = [];
  const own = successes.filter((s) => CALLER_NAME[s.c.credential] !== undefined);
  const caller = (s: Success) => CALLER_NAME[s.c.credential] as string;
  const of = (m: DescMethod) => own.filter((s) => s.c.method === m);
  const sends = of(M.send).filter((s) => !s.response.replayed);
  const kindOf = (s: Success): string | undefined => s.request.message?.kind?.case;

  // Messages written by members: exactly the deliveries successful Sends returned.
  const expected = new Map<string, string>();
  for (const s of sends) {
    for (const d of s.response.deliveries) expected.set(`${d.to}#${d.seq}`, caller(s));
  }
  for (const m of diff.newMessages.filter((x) => x.sender !== null)) {
    const key = `${m.recipient}#${m.seq}`;
    const by = expected.get(key);
    if (by === undefined) out.push(`message ${key} (${m.kind}) was stored by no successful Send`);
    else if (m.sender !== by || m.fromName !== by) {
      out.push(`message ${key} says it is from ${m.fromName}/${m.sender}, but ${by} sent it`);
    }
    expected.delete(key);
  }
  for (const key of expected.keys()) out.push(`Send returned delivery ${key}, but no row has it`);

  // Requests: new ones are the ones successful Sends opened; transitions need a cause.
  const opened = new Set(
    sends
      .filter((s) => OPENING_CASES.includes(kindOf(s) ?? ""))
      .map((s) => s.response.requestId as string),
  );
  for (const id of diff.newRequests) {
    if (!opened.delete(id)) out.push(`request ${id} was opened by no successful Send`);
  }
  for (const id of opened) out.push(`Send opened request ${id}, but no row has it`);

  // Members that were stopped at some point (a removed member may have been re-added).
  const stopped = new Set([
    ...[...after.members].filter(([, m]) => m.status === "stopped").map(([n]) => n),
    ...of(M.removeMember)
      .filter((s) => s.c.credential === "lead")
      .map((s) => s.response.member?.name as string),
    ...sends
      .filter((s) => kindOf(s) === "shutdownResponse" && s.request.message.kind.value.approve)
      .map(caller),
  ]);
  // Tasks whose owner or state a successful step changed: a request of theirs newly approved
  // (a claim, an assignment, an accepted handoff, a sign-off), or a deletion.
  const deletions = [
    ...of(M.deleteTask),
    ...of(M.updateTask).filter((s) => s.request.status === TaskProgress.DELETED),
  ];
  const movedTasks = new Set([
    ...[...after.requests]
      .filter(
        ([id, r]) =>
          r.taskId !== null &&
          r.status === "approved" &&
          before.requests.get(id)?.status !== "approved",
      )
      .map(([, r]) => r.taskId as string),
    ...deletions.map((s) => s.request.taskId as string),
  ]);
  // Calls that close a task, so that tasks waiting on it may become ready (the lead told).
  const closings =
    deletions.length +
    sends.filter((s) => kindOf(s) === "resultSignoffResponse" && saysYes(s)).length;
  const finishedWithoutAnswer = new Set<string>();
  for (const [id, r] of after.requests) {
    const b = before.requests.get(id);
    const changed = b === undefined ? r.status !== "pending" : b.status !== r.status;
    if (b) {
      const fields = diff.changedRequests.get(id)?.fields ?? [];
      const odd = fields.filter((f) => f !== "status" && f !== "responseHash");
      if (odd.length > 0) out.push(`request ${id}: ${odd.join(", ")} changed`);
    }
    if (!changed) continue;
    const answered = sends.filter(
      (s) =>
        ANSWER_CASES.includes(kindOf(s) ?? "") && s.request.message.kind.value.requestId === id,
    );
    // A task_assign is recorded approved by the Send that made it (counted as opened above).
    if (r.kind === "task_assign" && b === undefined && r.status === "approved") continue;
    if (r.status === "approved" || r.status === "rejected") {
      const approve = r.status === "approved";
      if (!answered.some((s) => saysYes(s) === approve)) {
        out.push(`request ${id} became ${r.status} without a successful answer saying so`);
      }
      if (r.responseHash === null) out.push(`request ${id} is ${r.status} without a response`);
    } else if (r.status === "canceled") {
      finishedWithoutAnswer.add(id);
      const byCancel = of(M.cancelRequest).some((s) => s.request.requestId === id);
      const partyStopped = stopped.has(r.from) || stopped.has(r.to);
      // A task's other pending requests are canceled when its owner changes or it is done.
      const taskMoved = r.taskId !== null && movedTasks.has(r.taskId);
      if (!byCancel && !partyStopped && !taskMoved) {
        out.push(
          `request ${id} (${r.kind}, ${r.from} -> ${r.to}) was canceled by no successful ` +
            "CancelRequest or stop",
        );
      }
    } else if (r.status === "expired") {
      finishedWithoutAnswer.add(id);
      if (r.expiresAt > now) out.push(`request ${id} expired before its deadline`);
    } else {
      out.push(`request ${id} went back to ${r.status}`);
    }
  }

  // Messages the server wrote: request updates for requests that ended without an answer.
  // And the lead's notices of a stopped member's tasks, given back.
  const released = [...diff.changedTasks].filter(
    ([, c]) => c.after.state === "unowned" && stopped.has(c.before.owner),
  ).length;
  let notices = 0;
  // A lease taken in the storm may lapse in it: the sweeper tells its holder, once each.
  const leaseNotices = new Map<string, number>();
  for (const s of of(M.acquireLease)) {
    leaseNotices.set(caller(s), (leaseNotices.get(caller(s)) ?? 0) + 1);
  }
  for (const m of diff.newMessages.filter((x) => x.sender === null)) {
    const left = leaseNotices.get(m.recipient) ?? 0;
    if (m.kind === "text" && left > 0) {
      leaseNotices.set(m.recipient, left - 1);
      continue;
    }
    if (m.kind === "task_notification" && m.recipient === "team-lead") {
      notices++;
      continue;
    }
    if (m.kind !== "request_update" || !finishedWithoutAnswer.has(m.requestId ?? "")) {
      out.push(`server message ${m.recipient}#${m.seq} (${m.kind}, ${m.requestId}) unexplained`);
    }
  }
  // A released task may be given to someone again before the end: at least one notice each.
  // Ready notices come with a task's completion or deletion.
  if (notices < released || (notices > 0 && stopped.size === 0 && closings === 0)) {
    out.push(`${notices} server task notices, but ${released} tasks of stopped members released`);
  }
  out.push(...diff.alteredMessages.map((m) => `stored message ${m}`));

  // Leases: each new one taken by a successful AcquireLease of its holder; none of the
  // storm's lease ids is real, so nothing is renewed, released or broken.
  const acquired = of(M.acquireLease).map(
    (s) =>
      `${caller(s)} ${s.response.lease?.mode === 2 ? "shared" : "exclusive"} ${s.response.lease?.resource}`,
  );
  for (const line of diff.newLeases) {
    const i = acquired.findIndex((a) => line.startsWith(`${a} until `));
    if (i < 0) out.push(`lease ${line} was taken by no successful AcquireLease`);
    else acquired.splice(i, 1);
  }
  for (const line of diff.goneLeases) {
    const holder = line.split(" ")[0] ?? "";
    if (!stopped.has(holder)) out.push(`lease ${line} went, but its holder never stopped`);
  }

  // Tasks: recorded by a successful claim or assignment naming them, or created; moved by an
  // approved request of theirs, given back when their owner stopped, or changed by a
  // successful UpdateTask naming them (its own fields, or what waits on what).
  const named = new Set([
    ...sends
      .filter((s) => ["taskClaimRequest", "taskAssign"].includes(kindOf(s) ?? ""))
      .map((s) => s.request.message.kind.value.taskId as string),
    ...of(M.createTask).map((s) => s.response.task?.taskId as string),
  ]);
  const updated = new Set(
    of(M.updateTask).flatMap((s) => [
      s.request.taskId as string,
      ...(s.request.addBlocks as string[]),
      ...(s.request.removeBlocks as string[]),
    ]),
  );
  for (const id of diff.newTasks) {
    if (!named.has(id))
      out.push(`task ${id} was recorded by no successful claim, assignment or CreateTask`);
  }
  for (const [id, c] of diff.changedTasks) {
    const givenBack = c.after.state === "unowned" && stopped.has(c.before.owner);
    if (!movedTasks.has(id) && !givenBack && !updated.has(id)) {
      out.push(
        `task ${id}: ${c.before.state} ${c.before.owner} -> ${c.after.state} ${c.after.owner} unexplained`,
      );
    }
  }
  out.push(...diff.goneTasks.map((id) => `task ${id} disappeared`));
  out.push(...diff.gaps.map((g) => `inbox not gapless: ${g}`));

  // Members.
  const added = new Set(
    of(M.addMember)
      .filter((s) => s.c.credential === "lead")
      .map((s) => s.response.member?.name as string),
  );
  const removed = new Set(
    of(M.removeMember)
      .filter((s) => s.c.credential === "lead")
      .map((s) => s.response.member?.name as string),
  );
  const shutDown = new Set(
    sends
      .filter((s) => kindOf(s) === "shutdownResponse" && s.request.message.kind.value.approve)
      .map(caller),
  );
  for (const n of diff.newMembers) {
    if (!added.has(n)) out.push(`member ${n} was added by no successful AddMember`);
  }
  for (const n of added) {
    if (!after.members.has(n)) out.push(`AddMember returned ${n}, but no row has it`);
  }
  for (const n of diff.goneMembers) out.push(`member ${n} disappeared`);
  for (const [n, a] of after.members) {
    const b = before.members.get(n);
    const acks = [
      ...of(M.ack).filter((s) => caller(s) === n),
      ...of(M.readInbox).filter((s) => caller(s) === n),
    ].map((s) => BigInt(s.response.ackedSeq));
    let ackedSeq = b?.ackedSeq ?? 0n;
    for (const x of acks) if (x > ackedSeq) ackedSeq = x;
    if (a.ackedSeq !== ackedSeq) {
      out.push(`member ${n}: acked_seq ${a.ackedSeq}, but successful acks explain ${ackedSeq}`);
    }
    if (!b) continue;
    // A removed member re-added by AddMember takes the role it asked for (teammate or observer).
    if (a.role !== b.role && !added.has(n)) {
      out.push(`member ${n}: role ${b.role} -> ${a.role} by no successful AddMember`);
    }
    if (b.status === "active" && a.status === "stopped" && !removed.has(n) && !shutDown.has(n)) {
      out.push(`member ${n} was stopped by no successful RemoveMember or shutdown approval`);
    }
    if ((b.status !== a.status && a.status === "active") || b.tokenHash !== a.tokenHash) {
      if (!added.has(n)) out.push(`member ${n} was re-activated by no successful AddMember`);
    }
    if (b.permissionMode !== a.permissionMode) {
      const approvedPlanOf = sends.some(
        (s) =>
          kindOf(s) === "planApprovalResponse" &&
          s.request.message.kind.value.approve &&
          after.requests.get(s.request.message.kind.value.requestId)?.from === n,
      );
      // Re-adding a stopped member sets its mode again (AddMember's permission_mode).
      if (!approvedPlanOf && !added.has(n)) {
        out.push(`member ${n}: permission mode changed without an approval or AddMember`);
      }
    }
  }

  // Idempotency keys.
  const keys = new Set(
    sends.filter((s) => s.request.messageId).map((s) => `${caller(s)}#${s.request.messageId}`),
  );
  for (const k of diff.newSends) {
    if (!keys.delete(k)) out.push(`idempotency key ${k} stored by no successful Send`);
  }
  for (const k of keys) out.push(`Send with key ${k} succeeded, but the key is not stored`);
  out.push(...diff.goneSends.map((k) => `idempotency key ${k} disappeared`));
  return out;
}

// ---------------------------------------------------------------------------------------

describeEachDatabase(
  "hostile input",
  (env) => {
    let world: FuzzWorld;
    let h2: H2Client;
    let agent: http.Agent;
    let before: TeamSnapshot;
    let teamsBefore: number;
    let storm: StormResult | undefined;
    let keepAliveRetries = 0;

    const countTeams = async () =>
      Number((await env().db.query<{ n: bigint }>("SELECT count(*) AS n FROM teams"))[0]?.n);

    beforeAll(async () => {
      serverErrors.length = 0;
      const a = await env().team("worker", "helper", "gone");
      const b = await env().team("carol");
      const worker = a.member("worker").client;
      const helper = a.member("helper").client;
      await a.lead.send({ to: "worker", message: text("start") });
      await worker.send({ to: "team-lead", message: text("on it") });
      const workerPlan = await worker.send({ to: "team-lead", message: planRequest("plan a") });
      const helperPlan = await helper.send({ to: "team-lead", message: planRequest("plan b") });
      const rejected = await worker.send({ to: "team-lead", message: planRequest("plan c") });
      await a.lead.send({ to: "worker", message: planResponse(rejected.requestId, false) });
      const helperShutdown = await a.lead.send({ to: "helper", message: shutdownRequest("x") });
      // Tasks: one the worker holds (with a handoff to the helper pending), one with a claim
      // of the helper's pending, one done.
      await a.lead.send({ to: "worker", message: assign("t-held") });
      const handoff = await worker.send({ to: "helper", message: handoffRequest("t-held") });
      const claim = await helper.send({ to: "team-lead", message: claimRequest("t-claimed") });
      await a.lead.send({ to: "worker", message: assign("t-done") });
      const signoff = await worker.send({ to: "team-lead", message: signoffRequest("t-done") });
      await a.lead.send({ to: "worker", message: signoffResponse(signoff.requestId, true) });
      await a.lead.removeMember({ name: "gone" });
      await b.lead.send({ to: "carol", message: text("team b") });
      world = {
        team: a.name,
        members: ["team-lead", "worker", "helper", "gone"],
        otherTeamMember: "carol",
        requestIds: [
          workerPlan.requestId,
          helperPlan.requestId,
          rejected.requestId,
          helperShutdown.requestId,
          handoff.requestId,
          claim.requestId,
          signoff.requestId,
        ],
        taskIds: ["t-held", "t-claimed", "t-done"],
        tokens: {
          lead: a.leadToken,
          worker: a.member("worker").token,
          revoked: a.member("gone").token,
          "other-team": b.leadToken,
        },
      };
      h2 = new H2Client(env().server.url);
      agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
      before = await snapshotTeam(env().db, a.name);
      teamsBefore = await countTeams();
    });

    afterAll(() => {
      h2?.close();
      agent?.destroy();
    });

    async function sendCase(c: FuzzCase): Promise<RawOutcome> {
      const streaming = c.method.methodKind === "server_streaming";
      const req: RawRequest = {
        onReusedSocketReset: () => {
          keepAliveRetries++;
        },
        path: c.path,
        headers: c.headers,
        body: c.body,
        timeoutMs: 20_000,
        chunked: c.chunked,
        ...(streaming ? { enough: hasCompleteFrame } : {}),
      };
      if (!c.transport.endsWith("h1")) {
        if (c.body.length <= 512 * 1024) return h2.request(req);
        // Large bodies get a connection of their own: when the response comes before the body
        // is sent, this client resets the stream, and Node's client never takes the unsent
        // bytes of a reset stream off its session memory count (10 MB), so a shared session
        // would end up refusing streams (ENHANCE_YOUR_CALM) through no fault of the server.
        const own = new H2Client(env().server.url);
        try {
          return await own.request(req);
        } finally {
          own.close();
        }
      }
      // Bodies refused unread share the keep-alive connections too: the server reads and
      // drops the rest, and the connection stays usable.
      return h1Request(env().server.url, agent, req);
    }

    async function runStorm(): Promise<StormResult> {
      const started = Date.now();
      const result: StormResult = {
        sent: 0,
        findings: [],
        successes: [],
        histogram: new Map(),
        ms: 0,
      };
      const indexes =
        ONLY === undefined ? Array.from({ length: COUNT }, (_, i) => i) : [ONLY as number];
      const lead = env().client(world.tokens.lead);
      let next = 0;
      const worker = async () => {
        for (;;) {
          const i = next++;
          if (i >= indexes.length) return;
          const c = makeCase(SEED, indexes[i] as number, world);
          if (ONLY !== undefined) console.log(`case: ${describeCase(c)}`);
          const outcome = await sendCase(c);
          result.sent++;
          check(c, outcome, result);
          // A canary: a normal call keeps working all through the storm.
          if (i % 250 === 249) {
            await lead.listMembers({}).catch((e) => {
              result.findings.push(`canary ListMembers failed after case ${i}: ${e}`);
            });
          }
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      result.ms = Date.now() - started;
      return result;
    }

    function check(c: FuzzCase, outcome: RawOutcome, result: StormResult) {
      const tally = (label: string) => {
        const m = result.histogram.get(c.method.name) ?? new Map<string, number>();
        m.set(label, (m.get(label) ?? 0) + 1);
        result.histogram.set(c.method.name, m);
      };
      const finding = (problem: string) => {
        result.findings.push(`${problem}\n    ${describeCase(c)}`);
      };
      if (outcome.kind === "transport-failure") {
        tally("NO RESPONSE");
        finding(`no response: ${outcome.reason}`);
        return;
      }
      const v = judge(c, outcome);
      tally(
        v.kind === "error" ? codeName(v.code) : v.kind === "http" ? `http ${v.status}` : v.kind,
      );
      if (ONLY !== undefined) console.log(`verdict: ${verdictText(v)}`);
      // CreateTeam and ImportTeam are open on this server (no admin token): any credential passes.
      const badCredential =
        BAD_CREDENTIALS.includes(c.credential) &&
        c.method !== M.createTeam &&
        c.method !== M.importTeam;
      const request = c.payload
        ? decodeRequest(c.method, c.payload.bytes, c.payload.binary)
        : undefined;
      switch (v.kind) {
        case "malformed":
          finding(`malformed response: ${v.why}`);
          return;
        case "http":
          if (!(c.expectHttpRefusal && [404, 405, 415].includes(v.status))) {
            finding(`HTTP ${v.status} without a Connect/gRPC error`);
          }
          return;
        case "error": {
          if (v.code === Code.Internal || v.code === Code.Unknown || v.code === Code.DataLoss) {
            finding(`${codeName(v.code)}: ${v.message}`);
            return;
          }
          if (badCredential) {
            const rule = RULE_IDS.find((id) => v.message.startsWith(`${id}:`));
            if (rule || v.code === Code.PermissionDenied || v.code === Code.NotFound) {
              finding(`a ${c.credential} token got past authentication: ${verdictText(v)}`);
            }
          }
          return;
        }
        case "success": {
          if (badCredential) {
            finding(`a ${c.credential} token was served: ${c.method.name} succeeded`);
            return;
          }
          const response = decodeResponse(c.method, v);
          if (request === undefined || response === undefined) {
            if (READ_ONLY.has(c.method)) return; // changes nothing: no need to know what it was
            finding(
              `success that this test cannot decode (request ${request !== undefined}, ` +
                `response ${response !== undefined})`,
            );
            return;
          }
          result.successes.push({ c, request, response });
        }
      }
    }

    it("answers every hostile request with a typed error (or a success), never Internal, and stays up", async () => {
      storm = await runStorm();
      const s = storm;
      const rows = [...s.histogram]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(
          ([m, h]) =>
            `  ${m.padEnd(14)} ${[...h]
              .sort((x, y) => y[1] - x[1])
              .map(([k, n]) => `${k} ${n}`)
              .join(", ")}`,
        );
      console.log(
        [
          `hostile input [${env().kind}]: seed ${SEED} (FUZZ_SEED=${SEED} to replay), ` +
            `${s.sent} requests in ${s.ms} ms, ${s.successes.length} recorded successes, ` +
            `${keepAliveRetries} HTTP/1.1 keep-alive races retried`,
          ...rows,
        ].join("\n"),
      );
      expect(s.sent).toBe(ONLY === undefined ? COUNT : 1);
      // Every RPC was exercised (and with this many cases, each one many times).
      if (ONLY === undefined) {
        for (const m of STORM_METHODS) {
          expect(s.histogram.get(m.name), m.name).toBeDefined();
        }
      }
      const findings = [
        ...s.findings,
        ...h2.sessionErrors.map((e) => `HTTP/2 session: ${e}`),
        ...serverErrors.map(
          (e) => `server logged ${e.code} on ${e.method}: ${e.err?.message ?? e.msg}`,
        ),
      ];
      expect(findings.slice(0, 25), `${findings.length} findings`).toEqual([]);
    }, 120_000);

    it("changed team A's stored rows only as the successful calls explain", async () => {
      if (!storm) throw new Error("the storm did not run");
      const now = new Date();
      const after = await snapshotTeam(env().db, world.team);
      const diff = diffSnapshots(before, after);
      const unexplained = unexplainedChanges(before, after, diff, storm.successes, now);
      const created = storm.successes.filter((s) => s.c.method === M.createTeam).length;
      console.log(
        `hostile input [${env().kind}]: team A changes: ${describeDiff(diff).length} ` +
          `(${diff.newMessages.length} new messages, ${diff.newRequests.length} new requests, ` +
          `${diff.newMembers.length} new members); ${created} teams created`,
      );
      expect(unexplained.slice(0, 25), `${unexplained.length} unexplained changes`).toEqual([]);
      expect(await countTeams()).toBe(teamsBefore + created);
    });

    it("still serves normal calls afterwards, on every protocol", async () => {
      const protocols: Protocol[] = ["connect", "grpc", "grpc-web", "connect-h1"];
      for (const p of protocols) {
        const lead = env().client(world.tokens.lead, p);
        const members = await lead.listMembers({});
        expect(members.members.map((m) => m.name)).toContain("worker");
        const sent = await env()
          .client(world.tokens.worker, p)
          .send({ to: "team-lead", message: text(`after the storm over ${p}`) });
        const read = await lead.readInbox({ afterSeq: sent.seq - 1n });
        expect(read.envelopes[0]?.message?.kind.value).toBe(`after the storm over ${p}`);
      }
    });

    // -------------------------------------------------------------------------------------
    // The bugs the storm found (K1..K7), each on its own, kept as regressions.

    /** One hand-made request as the worker: gRPC over HTTP/2, or Connect over HTTP/1.1. */
    const rawCall = async (
      method: DescMethod,
      contentType: string,
      body: Buffer,
      extra: Record<string, string> = {},
    ): Promise<Verdict> => {
      const grpc = contentType.startsWith("application/grpc");
      const request: RawRequest = {
        path: `/${TeamService.typeName}/${method.name}`,
        headers: {
          "content-type": contentType,
          authorization: `Bearer ${world.tokens.worker}`,
          ...(grpc ? { te: "trailers" } : { "connect-protocol-version": "1" }),
          ...extra,
        },
        body,
        timeoutMs: 10_000,
        ...(method.methodKind === "server_streaming" ? { enough: hasCompleteFrame } : {}),
      };
      const o = grpc
        ? await h2.request(request)
        : await h1Request(env().server.url, agent, request);
      if (o.kind !== "response") throw new Error(`no response: ${o.reason}`);
      return grpc ? judgeGrpc(o) : judgeConnectUnary(o);
    };
    const expectInvalidArgument = (v: Verdict, what: string) => {
      expect(v.kind, what).toBe("error");
      if (v.kind === "error")
        expect(v.code, `${what}: ${verdictText(v)}`).toBe(Code.InvalidArgument);
    };

    it("K5: oversized gRPC messages are refused with ResourceExhausted, and later calls on the same HTTP/2 connection still work (was: after 8 of them every call on it failed, ENHANCE_YOUR_CALM)", async () => {
      // The project's own generated client over gRPC, one HTTP/2 connection. The server
      // refuses each 1.1 MiB message as soon as it has read its length, then reads and drops
      // the rest of the body (server/http/oversized-request-bodies.ts). It used to leave the
      // request stream half-open: the client's unsent bytes stayed queued in its session
      // until Node's 10 MB session memory limit made it refuse every new stream.
      const client = env().client(world.tokens.worker, "grpc");
      const big = text("o".repeat(1_100_000));
      for (let i = 0; i < 12; i++) {
        const err = await client.send({ to: "team-lead", message: big }).then(
          () => undefined,
          (e) => ConnectError.from(e),
        );
        expect(err?.code, `oversized send ${i}: ${err?.message}`).toBe(Code.ResourceExhausted);
      }
      expect((await client.listMembers({})).members.length).toBeGreaterThan(0);
    });

    it("K6: a truncated gzip body is refused with InvalidArgument, not Internal (patches/@connectrpc+connect-node+2.1.2.patch)", async () => {
      const gz = gzipSync(Buffer.from('{"name":"someone"}'));
      const cut = gz.subarray(0, gz.length - 8);
      expectInvalidArgument(
        await rawCall(M.addMember, "application/json", cut, { "content-encoding": "gzip" }),
        "Connect JSON, content-encoding gzip, truncated",
      );
      expectInvalidArgument(
        await rawCall(M.addMember, "application/grpc", envelope(1, cut), {
          "grpc-encoding": "gzip",
        }),
        "gRPC, grpc-encoding gzip, truncated",
      );
    });

    it("K7: a gRPC call whose error message exceeds 64 KiB gets its error, and the HTTP/2 connection survives (grpc-message is capped)", async () => {
      // No valid token needed: the JSON is parsed before authentication.
      const conn = new H2Client(env().server.url);
      try {
        const call = (body: Buffer) =>
          conn.request({
            path: `/${TeamService.typeName}/${M.ack.name}`,
            headers: { "content-type": "application/grpc+json", te: "trailers" },
            body: envelope(0, body),
            timeoutMs: 10_000,
          });
        const big = await call(Buffer.from(JSON.stringify({ seq: "h".repeat(70_000) })));
        expect(big.kind, big.kind === "transport-failure" ? big.reason : "").toBe("response");
        const next = await call(Buffer.from("{}"));
        expect(next.kind, next.kind === "transport-failure" ? next.reason : "").toBe("response");
      } finally {
        conn.close();
      }
    });

    it("K7 over HTTP/1.1: a gRPC error message over 16 KiB still makes a readable response (grpc-message is capped)", async () => {
      const o = await h1Request(env().server.url, false, {
        path: `/${TeamService.typeName}/${M.ack.name}`,
        headers: { "content-type": "application/grpc+json", te: "trailers" },
        body: envelope(0, Buffer.from(JSON.stringify({ seq: "h".repeat(20_000) }))),
        timeoutMs: 10_000,
      });
      expect(o.kind, o.kind === "transport-failure" ? o.reason : "").toBe("response");
    });

    it("K7 over gRPC-Web/HTTP/1.1: a body over 1 MiB whose first message makes a huge error gets that error, capped, over fresh and keep-alive connections", async () => {
      // Two 900 KB messages: the first is refused with its value echoed in the error, while
      // the second is still on its way. The server used to answer and close the connection
      // with those bytes unread: the client's writes failed and it dropped the response
      // ("response aborted"), every time on a fresh connection.
      const huge = Buffer.from(JSON.stringify({ seq: "h".repeat(900_000) }));
      const request: RawRequest = {
        path: `/${TeamService.typeName}/${M.ack.name}`,
        headers: { "content-type": "application/grpc-web+json" },
        body: Buffer.concat([envelope(0, huge), envelope(0, huge)]),
        timeoutMs: 10_000,
      };
      const oneAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const vias: (http.Agent | false)[] = [false, false, false, oneAgent, oneAgent, oneAgent];
        for (const [i, via] of vias.entries()) {
          const o = await h1Request(env().server.url, via, request);
          expect(o.kind, `call ${i}: ${o.kind === "transport-failure" ? o.reason : ""}`).toBe(
            "response",
          );
          if (o.kind !== "response") continue;
          const v = judgeGrpcWeb(o);
          expect(v.kind === "error" ? v.code : v.kind, `call ${i}`).toBe(Code.InvalidArgument);
          expect(v.kind === "error" && v.message.length, `call ${i}`).toBeLessThan(1100);
        }
      } finally {
        oneAgent.destroy();
      }
    });

    it("K1: a protobuf body that does not parse is refused with InvalidArgument, not Internal (patches/@connectrpc+connect+2.1.2.patch)", async () => {
      // Two bytes: field 1 (string) claiming 16 bytes, none there. Any truncated or
      // bit-flipped protobuf, or invalid UTF-8 in a string field, gets the same answer.
      const body = Buffer.from([0x0a, 0x10]);
      expectInvalidArgument(await rawCall(M.addMember, "application/proto", body), "Connect proto");
      expectInvalidArgument(
        await rawCall(M.addMember, "application/grpc", envelope(0, body)),
        "gRPC",
      );
    });

    it("K2: a gRPC envelope with the compressed flag and no grpc-encoding is refused with InvalidArgument, not Internal", async () => {
      const v = await rawCall(M.listMembers, "application/grpc", envelope(1, Buffer.alloc(0)));
      expectInvalidArgument(v, "gRPC compressed flag, no encoding");
    });

    // Found by this test and fixed (f2f0b39): kept as regressions.

    it("a message_id holding U+0000 is refused with InvalidArgument, and nothing is stored (was Internal)", async () => {
      const rows = await snapshotTeam(env().db, world.team);
      const body = Buffer.from(
        JSON.stringify({ to: "team-lead", messageId: "a\u0000b", message: { text: "nul" } }),
      );
      const v = await rawCall(M.send, "application/json", body);
      expect(v.kind === "error" ? v.code : v.kind).toBe(Code.InvalidArgument);
      expect(describeDiff(diffSnapshots(rows, await snapshotTeam(env().db, world.team)))).toEqual(
        [],
      );
    });

    it("seqs above 2^63-1 (Ack.seq, ReadInbox.after_seq, Subscribe.after_seq) are refused with InvalidArgument (was Internal)", async () => {
      const max = "18446744073709551615";
      const ack = await rawCall(M.ack, "application/json", Buffer.from(`{"seq":"${max}"}`));
      expect(ack.kind === "error" ? ack.code : ack.kind, "Ack").toBe(Code.InvalidArgument);
      const read = await rawCall(
        M.readInbox,
        "application/json",
        Buffer.from(`{"afterSeq":"${max}"}`),
      );
      expect(read.kind === "error" ? read.code : read.kind, "ReadInbox").toBe(Code.InvalidArgument);
      const sub = await rawCall(
        M.subscribe,
        "application/grpc+json",
        envelope(0, Buffer.from(`{"afterSeq":"${max}"}`)),
      );
      expect(sub.kind === "error" ? sub.code : sub.kind, "Subscribe").toBe(Code.InvalidArgument);
    });
  },
  { logger, heartbeatIntervalMs: 100 },
);
