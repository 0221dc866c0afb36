import { gunzipSync, gzipSync } from "node:zlib";
import {
  create,
  type DescMessage,
  type DescMethod,
  fromBinary,
  type JsonValue,
  type MessageInitShape,
  toBinary,
  toJson,
  toJsonString,
} from "@bufbuild/protobuf";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MemberRole, TaskProgress } from "../../gen/team/v1/enums_pb.js";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { ListAttemptsResponseSchema, TeamService } from "../../gen/team/v1/team_service_pb.js";
import { type RawStreams, type RunningServer, startServer } from "../../server/http/http-server.js";
import { RetryInfoSchema } from "../../server/interceptors/retry-info.js";
import { silentLogger } from "../../server/logger.js";
import { describeEachDatabase, type TestTeam } from "../support/harness.js";
import { shutdownRequest, shutdownResponse, text } from "../support/protocol-helpers.js";
import { envelope, H2Client, hasCompleteFrame, splitFrames } from "../support/raw-rpc.js";

/**
 * One call pipeline (issue #12): every gRPC call served on the bare HTTP/2 stream must be
 * answered exactly as connect-node answers it, since both run the same implementation and
 * the same interceptors. Two servers on one app: `fast` with the app's raw streams (the
 * bare-stream path), `connect` without them (every call through connect-node). Each case
 * runs once against each, on a team of its own made the same way, and what comes back is
 * compared whole: HTTP status, response headers (all but date), trailers (grpc-status,
 * grpc-message, grpc-status-details-bin decoded, error metadata), each message (decoded,
 * and whether it was compressed), the journal lines it left and the metrics it moved.
 *
 * The cases are listed per method, and the list must name every method of TeamService's
 * descriptor: a method added to the proto fails this test until it has its cases.
 */

const S = TeamService.method;
const RATE = { perSecond: 1, burst: 3 };

/** A team of its own per case and path: lead, teammate `w`, observer `eye`. */
interface World {
  team: TestTeam;
  /** The observer's token. */
  eye: string;
  /** The request id of a shutdown the lead sent to `w` (made only when a case asks). */
  shutdownId?: string;
}

interface Call {
  /** Default: the method the case is listed under. */
  path?: string;
  /** The bearer token; undefined: none. */
  token?: string | undefined;
  /** The request message; its framing is added (gzip when `gzip`). */
  message?: Uint8Array;
  /** The whole body as is, instead of `message`. */
  body?: Uint8Array;
  headers?: Record<string, string>;
  gzip?: boolean;
  /** For streams: stop after the first message. */
  stream?: boolean;
}

interface Case {
  name: string;
  /** Setup, through connect on a third client (not compared); default none. */
  setup?(w: World): Promise<void>;
  call(w: World): Call;
  /** What the answer must be besides being the same on both paths. */
  grpcStatus?: string;
}

const bin = <D extends DescMessage>(schema: D, init: MessageInitShape<D>) =>
  toBinary(schema, create(schema, init));
const input = (m: DescMethod, init: Record<string, unknown>) =>
  bin(m.input, init as MessageInitShape<DescMessage>);
const lead = (w: World) => w.team.leadToken;
const mate = (w: World) => w.team.member("w").token;
const eye = (w: World) => w.eye;
const BAD_TOKEN = `tp_${"x".repeat(43)}`;

/** Two tasks: b waits on a. */
async function addTasks(w: World) {
  await w.team.lead.createTask({ taskId: "a", subject: "first" });
  await w.team.lead.createTask({ taskId: "b", subject: "second", blockedBy: ["a"] });
}

async function openShutdown(w: World) {
  const sent = await w.team.lead.send({ to: "w", message: shutdownRequest("done") });
  w.shutdownId = sent.requestId;
}

/** Cases every method gets: no token, a token of nobody, an observer where it may not. */
const common = (m: DescMethod, init: Record<string, unknown> = {}): Case[] => [
  { name: "no token", call: () => ({ message: input(m, init) }) },
  { name: "unknown token", call: () => ({ token: BAD_TOKEN, message: input(m, init) }) },
  { name: "malformed token", call: () => ({ token: "tp_short", message: input(m, init) }) },
  { name: "observer", call: (w) => ({ token: eye(w), message: input(m, init) }) },
];

/** Who makes the wire's cases, and how: the lead by default; a stream stops at its first message. */
interface WireOptions {
  token?: (w: World) => string;
  setup?: (w: World) => Promise<void>;
  stream?: boolean;
}

/**
 * The wire's cases: deadlines, encodings, framing, JSON. They are decided before or around
 * the method (the same code for every unary method, and for every server stream), so a few
 * methods of each kind of caller carry them: CreateTeam (no token), Send, ListMembers,
 * ReadInbox, and both server streams, Subscribe and WatchTeam.
 */
const wire = (m: DescMethod, init: Record<string, unknown> = {}, o: WireOptions = {}): Case[] =>
  wireCases(m, init, o.token ?? lead).map((c) => ({
    ...c,
    ...(o.setup ? { setup: o.setup } : {}),
    call: (w: World) => ({ ...c.call(w), ...(o.stream ? { stream: true } : {}) }),
  }));

const wireCases = (
  m: DescMethod,
  init: Record<string, unknown>,
  lead: (w: World) => string,
): Case[] => [
  {
    name: "grpc-timeout that passes",
    call: (w) => ({ token: lead(w), message: input(m, init), headers: { "grpc-timeout": "20S" } }),
  },
  {
    name: "grpc-timeout that is not one",
    call: (w) => ({ token: lead(w), message: input(m, init), headers: { "grpc-timeout": "soon" } }),
  },
  {
    name: "gzip request, gzip accepted",
    call: (w) => ({
      token: lead(w),
      message: input(m, init),
      gzip: true,
      headers: { "grpc-accept-encoding": "gzip" },
    }),
  },
  {
    name: "unknown encoding",
    call: (w) => ({
      token: lead(w),
      message: input(m, init),
      headers: { "grpc-encoding": "snappy" },
    }),
  },
  { name: "no message", call: (w) => ({ token: lead(w), body: new Uint8Array() }) },
  {
    name: "two messages",
    call: (w) => {
      const one = envelope(0, input(m, init));
      return { token: lead(w), body: Buffer.concat([one, one]) };
    },
  },
  {
    name: "a body that does not parse",
    // A varint cut short: no message parses it ([0x0a, 0x10] was after_seq 16 to
    // SubscribeRequest and ReadInboxRequest, which read a varint whatever the wire type).
    call: (w) => ({ token: lead(w), message: new Uint8Array([0x08, 0x80]) }),
  },
  {
    name: "a message over readMaxBytes",
    call: (w) => ({ token: lead(w), body: envelope(0, new Uint8Array(16), 2 * 1024 * 1024) }),
  },
  {
    name: "JSON (application/grpc+json)",
    call: (w) => ({
      token: lead(w),
      body: envelope(
        0,
        Buffer.from(toJsonString(m.input, create(m.input, init as MessageInitShape<DescMessage>))),
      ),
      headers: { "content-type": "application/grpc+json" },
    }),
  },
];

const CASES: Record<string, Case[]> = {
  [S.createTeam.name]: [
    {
      name: "creates",
      call: (w) => ({ message: input(S.createTeam, { team: `${w.team.name}-x` }) }),
    },
    { name: "bad name", call: () => ({ message: input(S.createTeam, { team: "Not A Name" }) }) },
    { name: "exists", call: (w) => ({ message: input(S.createTeam, { team: w.team.name }) }) },
    ...wire(S.createTeam, { team: "Not A Name" }),
  ],
  [S.addMember.name]: [
    { name: "adds", call: (w) => ({ token: lead(w), message: input(S.addMember, { name: "n" }) }) },
    {
      name: "not the lead",
      call: (w) => ({ token: mate(w), message: input(S.addMember, { name: "n" }) }),
    },
    {
      name: "exists",
      call: (w) => ({ token: lead(w), message: input(S.addMember, { name: "w" }) }),
    },
    ...common(S.addMember, { name: "n" }),
  ],
  [S.removeMember.name]: [
    {
      name: "removes",
      call: (w) => ({ token: lead(w), message: input(S.removeMember, { name: "w" }) }),
    },
    {
      name: "unknown",
      call: (w) => ({ token: lead(w), message: input(S.removeMember, { name: "zz" }) }),
    },
    ...common(S.removeMember, { name: "zz" }),
  ],
  [S.rotateToken.name]: [
    {
      name: "rotates its own",
      call: (w) => ({ token: mate(w), message: input(S.rotateToken, {}) }),
    },
    {
      name: "not the lead",
      call: (w) => ({ token: mate(w), message: input(S.rotateToken, { member: "team-lead" }) }),
    },
    {
      name: "unknown",
      call: (w) => ({ token: lead(w), message: input(S.rotateToken, { member: "zz" }) }),
    },
    ...common(S.rotateToken, {}),
  ],
  // A deletion that succeeds is not here: the comparison reads the team's journal after each
  // call, with the lead's token (test/service/team-lifecycle.test.ts has it).
  [S.deleteTeam.name]: [
    {
      name: "not the lead",
      call: (w) => ({ token: mate(w), message: input(S.deleteTeam, { team: w.team.name }) }),
    },
    {
      name: "another name",
      call: (w) => ({ token: lead(w), message: input(S.deleteTeam, { team: "zz" }) }),
    },
    ...common(S.deleteTeam, { team: "zz" }),
  ],
  // Leases: refusals and a listing only; a lease taken differs per call (its id and times),
  // and test/service/leases.test.ts has them.
  [S.acquireLease.name]: [
    {
      name: "a resource that names no place (lease-resource)",
      call: (w) => ({ token: mate(w), message: input(S.acquireLease, { resource: "../x" }) }),
    },
    ...common(S.acquireLease, { resource: "src/**" }),
  ],
  [S.renewLease.name]: [
    {
      name: "unknown",
      call: (w) => ({ token: mate(w), message: input(S.renewLease, { leaseId: "lease_zz" }) }),
    },
    ...common(S.renewLease, { leaseId: "lease_zz" }),
  ],
  [S.releaseLease.name]: [
    {
      name: "unknown",
      call: (w) => ({ token: lead(w), message: input(S.releaseLease, { leaseId: "lease_zz" }) }),
    },
    ...common(S.releaseLease, { leaseId: "lease_zz" }),
  ],
  [S.listLeases.name]: [
    { name: "lists", call: (w) => ({ token: mate(w), message: input(S.listLeases, {}) }) },
    {
      name: "a bad resource filter",
      call: (w) => ({ token: mate(w), message: input(S.listLeases, { resource: "/abs" }) }),
    },
    ...common(S.listLeases),
  ],
  [S.getThread.name]: [
    {
      name: "unknown",
      call: (w) => ({ token: mate(w), message: input(S.getThread, { threadId: "env_zz" }) }),
    },
    {
      name: "no thread_id",
      call: (w) => ({ token: mate(w), message: input(S.getThread, {}) }),
    },
    ...common(S.getThread, { threadId: "env_zz" }),
  ],
  [S.listThreads.name]: [
    { name: "lists", call: (w) => ({ token: mate(w), message: input(S.listThreads, {}) }) },
    ...common(S.listThreads),
  ],
  [S.searchMessages.name]: [
    {
      name: "searches",
      call: (w) => ({ token: mate(w), message: input(S.searchMessages, { query: "hello" }) }),
    },
    {
      name: "a query past its size",
      call: (w) => ({
        token: mate(w),
        message: input(S.searchMessages, { query: "x".repeat(1025) }),
      }),
    },
    ...common(S.searchMessages, { query: "hello" }),
  ],
  [S.listMembers.name]: [
    { name: "lists", call: (w) => ({ token: mate(w), message: input(S.listMembers, {}) }) },
    ...common(S.listMembers),
    ...wire(S.listMembers),
  ],
  [S.send.name]: [
    {
      name: "sends",
      call: (w) => ({ token: lead(w), message: input(S.send, { to: "w", message: text("hi") }) }),
    },
    {
      name: "broadcast",
      call: (w) => ({ token: lead(w), message: input(S.send, { to: "*", message: text("all") }) }),
    },
    {
      name: "no message (size-shape)",
      call: (w) => ({ token: lead(w), message: input(S.send, { to: "w" }) }),
    },
    {
      name: "unknown recipient",
      call: (w) => ({ token: lead(w), message: input(S.send, { to: "zz", message: text("x") }) }),
    },
    {
      name: "structured broadcast (no-broadcast), journaled",
      call: (w) => ({
        token: lead(w),
        message: input(S.send, { to: "*", message: shutdownRequest() }),
      }),
    },
    {
      name: "reject without a reason (reason-on-reject), journaled",
      setup: openShutdown,
      call: (w) => ({
        token: mate(w),
        message: input(S.send, {
          to: "team-lead",
          message: shutdownResponse(w.shutdownId ?? "", false),
        }),
      }),
    },
    {
      name: "an answer to nothing (unknown-request, stateful), journaled",
      call: (w) => ({
        token: mate(w),
        message: input(S.send, {
          to: "team-lead",
          message: shutdownResponse("req_AAAAAAAAAAAAAAAAAAAAAA", true),
        }),
      }),
    },
    {
      name: "over the send rate (send-rate, RetryInfo)",
      setup: async (w) => {
        for (let i = 0; i < RATE.burst; i++)
          await w.team.lead.send({ to: "w", message: text(`${i}`) });
      },
      call: (w) => ({ token: lead(w), message: input(S.send, { to: "w", message: text("more") }) }),
    },
    {
      name: "a large text, gzip both ways (compressed answer? no: SendResponse is small)",
      call: (w) => ({
        token: lead(w),
        message: input(S.send, { to: "w", message: text("z".repeat(4000)) }),
        gzip: true,
      }),
    },
    ...common(S.send, { to: "w", message: text("hi") }),
    ...wire(S.send, { to: "w", message: text("hi") }),
  ],
  [S.subscribe.name]: [
    {
      name: "first event",
      setup: async (w) => {
        await w.team.lead.send({ to: "w", message: text("one") });
      },
      call: (w) => ({
        token: mate(w),
        message: input(S.subscribe, { afterSeq: 0n }),
        stream: true,
      }),
    },
    { name: "no token", call: () => ({ message: input(S.subscribe, {}) }) },
    { name: "unknown token", call: () => ({ token: BAD_TOKEN, message: input(S.subscribe, {}) }) },
    { name: "observer", call: (w) => ({ token: eye(w), message: input(S.subscribe, {}) }) },
    {
      // The empty body had ended before the handler asked for its message, and the call got
      // no answer (fuzz seed 853528500).
      name: "JSON, no message",
      call: (w) => ({
        token: mate(w),
        body: new Uint8Array(),
        headers: { "content-type": "application/grpc+json" },
      }),
    },
    ...wire(
      S.subscribe,
      { afterSeq: 0n },
      {
        token: mate,
        setup: async (w) => {
          await w.team.lead.send({ to: "w", message: text("one") });
        },
        stream: true,
      },
    ),
  ],
  [S.readInbox.name]: [
    {
      // The error quotes the value: a lone surrogate made connect's setTrailerStatus throw
      // (encodeURIComponent), and the call got no answer on either path (patches/).
      name: "JSON whose error quotes a lone surrogate",
      call: (w) => ({
        token: mate(w),
        body: envelope(0, Buffer.from('{"afterSeq":"\\ud800"}')),
        headers: { "content-type": "application/grpc+json" },
      }),
      grpcStatus: "3",
    },
    {
      name: "reads a large inbox, gzip answer",
      setup: async (w) => {
        await w.team.lead.send({ to: "w", message: text("y".repeat(3000)) });
      },
      call: (w) => ({
        token: mate(w),
        message: input(S.readInbox, { afterSeq: 0n }),
        headers: { "grpc-accept-encoding": "gzip" },
      }),
    },
    {
      name: "reads, identity asked (not compressed)",
      setup: async (w) => {
        await w.team.lead.send({ to: "w", message: text("y".repeat(3000)) });
      },
      call: (w) => ({ token: mate(w), message: input(S.readInbox, { afterSeq: 0n }) }),
    },
    ...common(S.readInbox, {}),
    ...wire(S.readInbox, {}),
  ],
  [S.ack.name]: [
    {
      name: "past the inbox",
      call: (w) => ({ token: mate(w), message: input(S.ack, { seq: 5n }) }),
    },
    { name: "acks nothing", call: (w) => ({ token: mate(w), message: input(S.ack, { seq: 0n }) }) },
    ...common(S.ack, { seq: 0n }),
  ],
  [S.getRequest.name]: [
    {
      name: "gets",
      setup: openShutdown,
      call: (w) => ({ token: lead(w), message: input(S.getRequest, { requestId: w.shutdownId }) }),
    },
    {
      name: "malformed id",
      call: (w) => ({ token: lead(w), message: input(S.getRequest, { requestId: "x" }) }),
    },
    ...common(S.getRequest, { requestId: "req_AAAAAAAAAAAAAAAAAAAAAA" }),
  ],
  [S.listRequests.name]: [
    {
      name: "lists",
      setup: openShutdown,
      call: (w) => ({ token: lead(w), message: input(S.listRequests, {}) }),
    },
    ...common(S.listRequests, {}),
  ],
  [S.awaitRequest.name]: [
    {
      name: "an expired grpc-timeout while pending",
      setup: openShutdown,
      call: (w) => ({
        token: lead(w),
        message: input(S.awaitRequest, { requestId: w.shutdownId }),
        headers: { "grpc-timeout": "1n" },
      }),
    },
    {
      name: "its own timeout",
      setup: openShutdown,
      call: (w) => ({
        token: lead(w),
        message: input(S.awaitRequest, { requestId: w.shutdownId, timeout: { nanos: 1_000_000 } }),
      }),
    },
    ...common(S.awaitRequest, { requestId: "req_AAAAAAAAAAAAAAAAAAAAAA" }),
  ],
  [S.cancelRequest.name]: [
    {
      name: "cancels",
      setup: openShutdown,
      call: (w) => ({
        token: lead(w),
        message: input(S.cancelRequest, { requestId: w.shutdownId }),
      }),
    },
    {
      name: "not the requester (requester-only), journaled",
      setup: openShutdown,
      call: (w) => ({
        token: mate(w),
        message: input(S.cancelRequest, { requestId: w.shutdownId }),
      }),
    },
    ...common(S.cancelRequest, { requestId: "req_AAAAAAAAAAAAAAAAAAAAAA" }),
  ],
  [S.createTask.name]: [
    {
      name: "creates",
      call: (w) => ({ token: mate(w), message: input(S.createTask, { subject: "Write it" }) }),
    },
    {
      name: "a dependency on no task (task-exists, stateful)",
      call: (w) => ({
        token: lead(w),
        message: input(S.createTask, { subject: "Write it", blockedBy: ["nope"] }),
      }),
    },
    ...common(S.createTask, { subject: "Write it" }),
  ],
  [S.updateTask.name]: [
    {
      name: "updates",
      setup: addTasks,
      call: (w) => ({
        token: lead(w),
        message: input(S.updateTask, { taskId: "b", description: "more" }),
      }),
    },
    {
      name: "a cycle (no-cycle, stateful)",
      setup: addTasks,
      call: (w) => ({
        token: lead(w),
        message: input(S.updateTask, { taskId: "a", addBlockedBy: ["b"] }),
      }),
    },
    {
      name: "completed by hand (signoff-completes)",
      call: (w) => ({
        token: lead(w),
        message: input(S.updateTask, { taskId: "a", status: TaskProgress.COMPLETED }),
      }),
    },
    ...common(S.updateTask, { taskId: "a", subject: "s" }),
  ],
  [S.deleteTask.name]: [
    {
      name: "deletes, unblocking b",
      setup: addTasks,
      call: (w) => ({ token: lead(w), message: input(S.deleteTask, { taskId: "a" }) }),
    },
    {
      name: "not the lead (owner-or-lead-updates)",
      call: (w) => ({ token: mate(w), message: input(S.deleteTask, { taskId: "a" }) }),
    },
    ...common(S.deleteTask, { taskId: "a" }),
  ],
  [S.getTask.name]: [
    {
      name: "gets",
      setup: addTasks,
      call: (w) => ({ token: mate(w), message: input(S.getTask, { taskId: "b" }) }),
    },
    ...common(S.getTask, { taskId: "a" }),
  ],
  [S.listTasks.name]: [
    {
      name: "lists the blocked",
      setup: addTasks,
      call: (w) => ({ token: mate(w), message: input(S.listTasks, { blocked: true }) }),
    },
    ...common(S.listTasks, {}),
  ],
  [S.listAttempts.name]: [
    {
      name: "lists a refusal",
      setup: async (w) => {
        await w.team.lead.send({ to: "*", message: shutdownRequest() }).catch(() => undefined);
      },
      call: (w) => ({ token: lead(w), message: input(S.listAttempts, {}) }),
    },
    ...common(S.listAttempts, {}),
  ],
  [S.watchTeam.name]: [
    {
      name: "first event",
      call: (w) => ({ token: lead(w), message: input(S.watchTeam, {}), stream: true }),
    },
    { name: "a teammate", call: (w) => ({ token: mate(w), message: input(S.watchTeam, {}) }) },
    { name: "no token", call: () => ({ message: input(S.watchTeam, {}) }) },
    {
      name: "a deadline already past",
      call: (w) => ({
        token: lead(w),
        message: input(S.watchTeam, {}),
        headers: { "grpc-timeout": "0n" },
      }),
    },
    ...wire(S.watchTeam, {}, { stream: true }),
  ],
  // The bundle itself differs between two exports (its time, its signature): its refusals here;
  // what it holds is history-export.test.ts's.
  [S.exportTeam.name]: [
    { name: "a teammate", call: (w) => ({ token: mate(w), message: input(S.exportTeam, {}) }) },
    { name: "no token", call: () => ({ message: input(S.exportTeam, {}) }) },
    {
      name: "a deadline already past",
      call: (w) => ({
        token: lead(w),
        message: input(S.exportTeam, {}),
        headers: { "grpc-timeout": "0n" },
      }),
    },
  ],
  // A client stream: connect-node serves it on both paths (the bare-stream path serves
  // unary and server streams only); the cases hold that it stays so.
  [S.importTeam.name]: [
    {
      name: "an empty bundle",
      call: () => ({ message: input(S.importTeam, { chunk: new Uint8Array() }) }),
    },
    { name: "no message", call: () => ({ body: new Uint8Array() }) },
    {
      name: "bad name",
      call: () => ({ message: input(S.importTeam, { team: "Not A Name" }) }),
    },
    {
      name: "a bundle in two chunks",
      call: () => ({
        body: Buffer.concat([
          envelope(0, input(S.importTeam, { chunk: Buffer.from("{}\n{") })),
          envelope(0, input(S.importTeam, { chunk: Buffer.from("}\n") })),
        ]),
      }),
    },
    {
      name: "a team name on a later chunk",
      call: () => ({
        body: Buffer.concat([
          envelope(0, input(S.importTeam, { chunk: Buffer.from("{}\n") })),
          envelope(0, input(S.importTeam, { team: "later" })),
        ]),
      }),
    },
    ...common(S.importTeam, { chunk: Buffer.from("{}\n{}\n") }),
  ],
  // Not a method: answered as connect-node answers a path no RPC has.
  "(no such method)": [
    {
      name: "404",
      call: (w) => ({
        path: `/${TeamService.typeName}/Nope`,
        token: lead(w),
        message: new Uint8Array(),
      }),
    },
  ],
};

/** What a response says, with what differs between any two runs (names, tokens, times) blanked. */
function normalizer(teamName: string) {
  const strings = (s: string) =>
    s
      .replaceAll(teamName, "<team>")
      .replace(/tp_[A-Za-z0-9_-]{43}/g, "<token>")
      .replace(/req_[A-Za-z0-9_-]{22}/g, "<request>")
      .replace(/env_[A-Za-z0-9_-]{22}/g, "<envelope>")
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>")
      .replace(/retry in \d+ ms/g, "retry in <n> ms")
      .replace(/^\d+(\.\d+)?s$/, "<duration>");
  const walk = (v: JsonValue, key = ""): JsonValue => {
    if (typeof v === "string") {
      if (v !== "" && ["id", "position", "nextPageToken", "cursor"].includes(key)) return "<n>";
      return strings(v);
    }
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === "object") {
      // last_seen_at (and with it last_seen_via and presence) is written in the background
      // (auth's touch throttle): whether a listing sees it yet is a race of either path, not
      // something a path decides.
      const kept = Object.entries(v).filter(
        ([k]) => k !== "lastSeenAt" && k !== "lastSeenVia" && k !== "presence",
      );
      return Object.fromEntries(kept.map(([k, x]) => [k, walk(x as JsonValue, k)]));
    }
    return v;
  };
  return { strings, walk };
}

function decodeDetail(d: { type: string; value: Uint8Array }): JsonValue {
  if (d.type === RuleViolationSchema.typeName) {
    return { [d.type]: toJson(RuleViolationSchema, fromBinary(RuleViolationSchema, d.value)) };
  }
  if (d.type === RetryInfoSchema.typeName) {
    return { [d.type]: toJson(RetryInfoSchema, fromBinary(RetryInfoSchema, d.value)) };
  }
  return { [d.type]: Buffer.from(d.value).toString("base64") };
}

describeEachDatabase(
  "one call pipeline: gRPC on the bare HTTP/2 stream answers exactly as connect-node does",
  (env) => {
    let fast: RunningServer;
    let viaConnect: RunningServer;
    let fastCalls = 0;
    beforeAll(async () => {
      const app = env().app;
      const raw = app.rawStreams() as RawStreams;
      expect(raw, "the fast path is on by default").toBeDefined();
      const counting: RawStreams = {
        accepts: (h) => raw.accepts(h),
        serve: (...args) => {
          fastCalls++;
          raw.serve(...args);
        },
      };
      const common = {
        handler: app.nodeHandler(),
        wholeBodies: app.wholeBodies(),
        host: "127.0.0.1",
        port: 0,
        logger: silentLogger(),
      };
      fast = await startServer({ ...common, rawStreams: counting, metrics: app.metrics });
      viaConnect = await startServer(common);
    });
    afterAll(async () => {
      await fast?.close(1_000, () => env().app.hub.endAll());
      await viaConnect?.close(1_000);
    });

    /** The counters of calls and refusals, read in-process (the app's one registry). */
    async function counters(): Promise<Map<string, number>> {
      const out = new Map<string, number>();
      for (const name of ["team_rpc_calls_total", "team_refusals_total"]) {
        const metric = env().app.metrics.registry.getSingleMetric(name);
        for (const v of (await metric?.get())?.values ?? []) {
          out.set(`${name}${JSON.stringify(v.labels)}`, v.value);
        }
      }
      return out;
    }
    const moved = (a: Map<string, number>, b: Map<string, number>, method: string) =>
      [...b].some(([k, v]) => k.includes(`"method":"${method}"`) && v !== (a.get(k) ?? 0));

    async function run(url: string, method: string, c: Case) {
      const team = await env().team("w");
      const observer = await team.lead.addMember({ name: "eye", role: MemberRole.OBSERVER });
      const world: World = { team, eye: observer.token };
      await c.setup?.(world);
      const call = c.call(world);
      const methodDesc = TeamService.methods.find((m) => m.name === method);
      const path = call.path ?? `/${TeamService.typeName}/${method}`;
      const message = call.message ?? new Uint8Array();
      const body = call.body ?? (call.gzip ? envelope(1, gzipSync(message)) : envelope(0, message));
      const headers: Record<string, string> = {
        "content-type": "application/grpc",
        te: "trailers",
        ...(call.gzip ? { "grpc-encoding": "gzip" } : {}),
        ...(call.token === undefined ? {} : { authorization: `Bearer ${call.token}` }),
        ...call.headers,
      };
      const before = await counters();
      const client = new H2Client(url);
      const res = await client.request({
        path,
        headers,
        body,
        timeoutMs: 10_000,
        ...(call.stream ? { enough: hasCompleteFrame } : {}),
      });
      client.close();
      // A stream's end is counted once the server saw the client leave: wait for it.
      let after = await counters();
      for (let i = 0; call.stream && i < 100 && !moved(before, after, method); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        after = await counters();
      }
      const n = normalizer(team.name);
      if (res.kind !== "response") return { transport: res.reason };
      const { date: _date, ...responseHeaders } = res.headers;
      const trailers = { ...res.trailers };
      const error = findTrailerError(
        new Headers(
          Object.entries({ ...res.headers, ...trailers }).filter(([k]) => !k.startsWith(":")),
        ),
      );
      const details = error?.details.map((d) =>
        n.walk(decodeDetail(d as { type: string; value: Uint8Array })),
      );
      delete trailers["grpc-status-details-bin"];
      if (trailers["grpc-message"])
        trailers["grpc-message"] = n.strings(decodeURIComponent(trailers["grpc-message"]));
      const json = headers["content-type"].includes("json");
      const messages = splitFrames(res.body).frames.map((f) => {
        const data = f.flags & 1 ? gunzipSync(f.data) : f.data;
        const output = methodDesc?.output;
        if (!output) return { flags: f.flags, bytes: data.length };
        const decoded = json
          ? (JSON.parse(data.toString("utf8")) as JsonValue)
          : toJson(output, fromBinary(output, data));
        return { compressed: (f.flags & 1) === 1, message: n.walk(decoded) };
      });
      // What the call moved in the counters of calls and refusals (one registry: the app's).
      const metricMoves: Record<string, number> = {};
      for (const [sample, value] of after) {
        const delta = value - (before.get(sample) ?? 0);
        if (delta !== 0) metricMoves[sample] = delta;
      }
      const journal = n.walk(
        toJson(
          ListAttemptsResponseSchema,
          await env().client(team.leadToken).listAttempts({}),
        ) as JsonValue,
      );
      return {
        httpStatus: res.httpStatus,
        headers: n.walk(responseHeaders as JsonValue),
        trailers,
        details,
        messages,
        journal,
        metricMoves,
      };
    }

    it("every method of the descriptor has cases", () => {
      const missing = TeamService.methods.map((m) => m.name).filter((name) => !(name in CASES));
      expect(missing, "methods without cases here").toEqual([]);
    });

    for (const [method, cases] of Object.entries(CASES)) {
      it(
        `${method}: ${cases.map((c) => c.name).join("; ")}`,
        async () => {
          for (const c of cases) {
            const servedBefore = fastCalls;
            const overFast = await run(fast.url, method, c);
            const servedFast = fastCalls - servedBefore;
            const overConnect = await run(viaConnect.url, method, c);
            expect(overFast, `${method}: ${c.name}`).toEqual(overConnect);
            if (c.grpcStatus !== undefined) {
              expect(overFast.trailers?.["grpc-status"], `${method}: ${c.name}`).toBe(c.grpcStatus);
            }
            // The fast server took the call itself; a client stream (ImportTeam) it leaves to
            // connect-node (streaming/grpc-calls.ts serves unary and server streams only).
            const clientStream = TeamService.methods.some(
              (m) => m.name === method && m.methodKind === "client_streaming",
            );
            expect(servedFast, `${method}: ${c.name} served on the bare stream`).toBe(
              clientStream ? 0 : 1,
            );
          }
          // Each case makes two teams and two calls: a method with many cases needs more than
          // the default 30 s on a busy machine, and one that timed out would keep running into
          // the next method's counters.
        },
        10_000 * cases.length,
      );
    }
  },
  { sendRate: RATE },
);
