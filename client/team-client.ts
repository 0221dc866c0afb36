import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { MemberRole } from "@team-protocols/contract/team/v1/enums_pb.js";
import type {
  Lease,
  Member,
  RequestRecord,
  Task,
} from "@team-protocols/contract/team/v1/records_pb.js";
import {
  type AddMemberResponse,
  type CreateTeamResponse,
  type GetTaskResponse,
  type ListAttemptsResponse,
  type ListRequestsResponse,
  type ListTasksResponse,
  type ReadInboxResponse,
  type SendResponse,
  TeamService,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import type { BackoffOptions } from "./backoff.js";
import { createInbox, type Inbox, type InboxOptions } from "./inbox.js";
import {
  type MessageInit,
  planRequestMessage,
  planResponseMessage,
  resultSignoffRequestMessage,
  resultSignoffResponseMessage,
  shutdownRequestMessage,
  shutdownResponseMessage,
  type TaskReport,
  taskAssignMessage,
  taskClaimRequestMessage,
  taskClaimResponseMessage,
  taskHandoffRequestMessage,
  taskHandoffResponseMessage,
  taskNotificationMessage,
  textMessage,
} from "./messages.js";
import {
  type AttemptOutcomeName,
  attemptOutcomeOf,
  type LeaseModeName,
  leaseModeOf,
  type PermissionModeName,
  permissionModeOf,
  type RequestKindName,
  type RequestStatusName,
  requestKindOf,
  requestStatusOf,
  type TaskProgressName,
  type TaskStateName,
  taskProgressOf,
  taskStateOf,
} from "./names.js";
import { newMessageId, retryWhileUnavailable } from "./send-retry.js";
import { createTeamWatch, type TeamWatch, type TeamWatchOptions } from "./team-watch.js";
import { createTeamTransport, type TransportOptions } from "./transport.js";

export interface TeamClientOptions extends TransportOptions {
  /** Deadline of each unary call (of a send: of all its attempts together). Default 30 s. */
  timeoutMs?: number;
  /** Pauses between the attempts of a send that met Unavailable. Default 100 ms doubling to 5 s. */
  sendBackoff?: BackoffOptions | undefined;
  /**
   * Calls go through this transport instead of one to `baseUrl` (e.g. the server's own routes
   * in-process, for its /mcp endpoint). It must authenticate the calls itself; withToken()
   * needs a baseUrl transport.
   */
  transport?: Transport | undefined;
}

export interface SendOptions {
  /**
   * Idempotency key: a retried send with the same key stores nothing new. Default: a fresh
   * one per send, so that the client can retry a send that met Unavailable (a server
   * restart, a database failover) and it is still stored once. `""`: no key, one attempt.
   */
  messageId?: string;
  /** The id (Envelope.id) of the message this one answers: it joins that message's thread. */
  replyTo?: string;
}

export interface RequestOptions extends SendOptions {
  /** Time the addressee has to answer (1 s to 7 days); default: the server's per kind. */
  ttlMs?: number;
}

export interface AttemptFilter {
  /** Only this member's attempts (a teammate may only name itself). */
  member?: string;
  outcome?: AttemptOutcomeName;
  /** Only attempts naming this request. */
  requestId?: string;
  pageSize?: number;
  pageToken?: string;
}

export interface RequestFilter {
  status?: RequestStatusName;
  kind?: RequestKindName;
  /** Only requests this member sent or must answer. */
  party?: string;
  pageSize?: number;
  pageToken?: string;
}

export interface TaskFilter {
  /** Only tasks this member holds (or held when they were done). */
  owner?: string;
  state?: TaskStateName;
  /** Only this status (unset: any but deleted). */
  status?: TaskProgressName;
  /** Only tasks that may be claimed now: unowned, pending, nothing open blocking them. */
  ready?: boolean;
  /** Only open tasks that wait on an open task. */
  blocked?: boolean;
  pageSize?: number;
  pageToken?: string;
}

export interface NewTask {
  /** Unset: the team's next free number. */
  taskId?: string;
  description?: string;
  /** What the owner shows while working on it ("Running the tests"). */
  activeForm?: string;
  /** Tasks of the team it waits on. */
  blockedBy?: string[];
}

/** UpdateTask's changes; each unset one stays as it is. */
export interface TaskChanges {
  subject?: string;
  description?: string;
  activeForm?: string;
  addBlockedBy?: string[];
  removeBlockedBy?: string[];
  addBlocks?: string[];
  removeBlocks?: string[];
  /** pending or in_progress (its owner), deleted (the lead). */
  status?: TaskProgressName;
}

/** AcquireLease's options; unset: exclusive, the server's default ttl, no reason. */
export interface LeaseOptions {
  mode?: LeaseModeName;
  ttlSeconds?: number;
  /** What for: shown to whoever is refused by it. */
  reason?: string;
}

/** Options of an answer that goes back to the requester (looked up when `to` is not given). */
export type AnswerOptions = SendOptions & { to?: string };

/** The whole service for one member (or, without a token, for creating teams). */
export interface TeamClient {
  readonly baseUrl: string;
  /** The generated client over the same transport, for anything the helpers leave out. */
  readonly rpc: Client<typeof TeamService>;
  /** The same server and protocol, as another member. */
  withToken(token: string): TeamClient;

  /** Creates a team; the response holds the lead's token (shown once). */
  createTeam(
    team: string,
    options?: { leadName?: string; leadPermissionMode?: PermissionModeName },
  ): Promise<CreateTeamResponse>;
  /**
   * `permissionMode`: the mode the teammate starts in; unset: the lead's own. `observer`: a
   * read-only member (it lists and watches the team, nothing else). `approver`: a member who
   * answers the lead's approvals on its behalf (plans, permissions, task claims, sign-offs).
   */
  addMember(
    name: string,
    options?: { permissionMode?: PermissionModeName; observer?: boolean; approver?: boolean },
  ): Promise<AddMemberResponse>;
  removeMember(name: string): Promise<Member>;
  members(): Promise<Member[]>;
  /** The lead's name (looked up once). Answers and reports go to the lead. */
  leadName(): Promise<string>;

  send(to: string, message: MessageInit, options?: RequestOptions): Promise<SendResponse>;
  sendText(to: string, text: string, options?: SendOptions): Promise<SendResponse>;
  /** Text to every other active member. */
  broadcast(text: string, options?: SendOptions): Promise<SendResponse>;

  /** Lead: asks a teammate to stop. The response's requestId is what the answer carries. */
  requestShutdown(
    member: string,
    options?: RequestOptions & { reason?: string },
  ): Promise<SendResponse>;
  /** Teammate: agrees to stop. The server stops the member once the lead has the answer. */
  approveShutdown(requestId: string, options?: SendOptions): Promise<SendResponse>;
  /** Teammate: keeps working; the reason is required. */
  rejectShutdown(requestId: string, reason: string, options?: SendOptions): Promise<SendResponse>;
  /** Teammate: asks the lead to approve a plan. */
  submitPlan(plan: string, options?: RequestOptions): Promise<SendResponse>;
  /** Lead: approves; the teammate inherits the lead's permission mode. */
  approvePlan(
    requestId: string,
    options?: SendOptions & { feedback?: string; to?: string },
  ): Promise<SendResponse>;
  /** Lead: rejects with feedback (blank: "Plan needs revision"). */
  rejectPlan(
    requestId: string,
    feedback?: string,
    options?: SendOptions & { to?: string },
  ): Promise<SendResponse>;
  /** Worker: tells the lead how a task ended. */
  notifyTask(report: TaskReport, options?: SendOptions): Promise<SendResponse>;

  /** Teammate: asks the lead to become the task's one owner. */
  claimTask(taskId: string, options?: RequestOptions & { note?: string }): Promise<SendResponse>;
  /** Lead: the requester owns the task from now on. */
  approveClaim(requestId: string, options?: AnswerOptions): Promise<SendResponse>;
  /** Lead: the task stays unowned; the reason is required. */
  rejectClaim(requestId: string, reason: string, options?: AnswerOptions): Promise<SendResponse>;
  /** Lead: gives the task to `member` directly (no answer needed; it is recorded approved). */
  assignTask(
    taskId: string,
    member: string,
    options?: RequestOptions & { note?: string },
  ): Promise<SendResponse>;
  /**
   * Owner: asks `member` (another active teammate) to take the task over, or the lead to
   * take it back (then, once accepted, it is unowned). `note`: where the work stands.
   */
  handOffTask(
    taskId: string,
    member: string,
    note: string,
    options?: RequestOptions,
  ): Promise<SendResponse>;
  /** Addressee of a handoff: the task is now yours (or, for the lead, unowned). */
  acceptHandoff(requestId: string, options?: AnswerOptions): Promise<SendResponse>;
  /** Addressee of a handoff: the owner keeps it; the reason is required. */
  rejectHandoff(requestId: string, reason: string, options?: AnswerOptions): Promise<SendResponse>;
  /** Owner: asks the lead to sign off the task's result. */
  requestSignoff(
    taskId: string,
    result: string,
    options?: RequestOptions & { summary?: string },
  ): Promise<SendResponse>;
  /** Lead: the task is done. */
  approveSignoff(
    requestId: string,
    options?: AnswerOptions & { feedback?: string },
  ): Promise<SendResponse>;
  /** Lead: the owner keeps the task and should act on the feedback (required). */
  rejectSignoff(
    requestId: string,
    feedback: string,
    options?: AnswerOptions,
  ): Promise<SendResponse>;
  /** Any member but an observer: a new task on the team's list. */
  createTask(subject: string, options?: NewTask): Promise<Task>;
  /** The lead, or the task's owner for its own text and status (see UpdateTask). */
  updateTask(taskId: string, changes: TaskChanges): Promise<Task>;
  /** Lead: deletes a task; the tasks that waited only on it become ready. */
  deleteTask(taskId: string): Promise<Task>;
  /** One task and its history of requests (claims, assignments, handoffs, sign-offs). */
  getTask(taskId: string): Promise<GetTaskResponse>;
  /** The team's task list, most recently changed first. */
  listTasks(filter?: TaskFilter): Promise<ListTasksResponse>;

  getRequest(requestId: string): Promise<RequestRecord>;
  /** Newest first; the lead sees the team's requests, others their own. */
  listRequests(filter?: RequestFilter): Promise<ListRequestsResponse>;
  /** Waits until the request leaves pending, or `timeoutMs` (default 60 s) passes. */
  awaitRequest(requestId: string, options?: { timeoutMs?: number }): Promise<RequestRecord>;
  /** Requester: withdraws a pending request. */
  cancelRequest(requestId: string): Promise<RequestRecord>;
  /**
   * The protocol journal, newest first: every protocol step attempted, accepted or refused
   * (with the rule). The lead sees the team's, others their own.
   */
  listAttempts(filter?: AttemptFilter): Promise<ListAttemptsResponse>;

  /** Takes a lease on a path glob or kind:name (refused lease-held when another member's overlaps). */
  acquireLease(resource: string, options?: LeaseOptions): Promise<Lease>;
  /** The holder extends its lease to now + ttlSeconds (unset: the server's default). */
  renewLease(leaseId: string, ttlSeconds?: number): Promise<Lease>;
  /** The holder gives it back; the lead breaks another member's with a reason. */
  releaseLease(leaseId: string, reason?: string): Promise<Lease>;
  /** The team's live leases, oldest first; by holder, or overlapping a resource. */
  listLeases(filter?: { holder?: string; resource?: string }): Promise<Lease[]>;

  /** One read of the inbox (after the ack cursor unless `afterSeq`); `ack` drains. */
  readInbox(options?: {
    afterSeq?: bigint | number;
    limit?: number;
    ack?: boolean;
  }): Promise<ReadInboxResponse>;
  /** Marks the inbox consumed up to `seq`; returns the cursor. */
  ack(seq: bigint | number): Promise<bigint>;
  /** The live inbox as an async iterator that survives disconnects (see inbox.ts). */
  inbox(options?: InboxOptions): Inbox;
  /** The whole team's feed (lead or observer), resuming by cursor (see team-watch.ts). */
  watch(options?: TeamWatchOptions): TeamWatch;
}

export function createTeamClient(options: TeamClientOptions): TeamClient {
  const rpc = createClient(TeamService, options.transport ?? createTeamTransport(options));
  // Whole milliseconds: connect-node sends a fraction as-is, which servers refuse.
  const timeoutMs = Math.ceil(options.timeoutMs ?? 30_000);
  const call = { timeoutMs };
  let lead: Promise<string> | undefined;

  // An answer goes back to whoever asked: the request record says who, unless the caller knows.
  const requester = async (requestId: string, o: AnswerOptions) =>
    o.to ?? (await self.getRequest(requestId)).from;

  const self: TeamClient = {
    baseUrl: options.baseUrl,
    rpc,
    withToken: (token) => createTeamClient({ ...options, transport: undefined, token }),

    createTeam: (team, o = {}) =>
      rpc.createTeam(
        {
          team,
          leadName: o.leadName ?? "",
          ...(o.leadPermissionMode
            ? { leadPermissionMode: permissionModeOf(o.leadPermissionMode) }
            : {}),
        },
        call,
      ),
    addMember: (name, o = {}) =>
      rpc.addMember(
        {
          name,
          ...(o.permissionMode ? { permissionMode: permissionModeOf(o.permissionMode) } : {}),
          ...(o.observer ? { role: MemberRole.OBSERVER } : {}),
          ...(o.approver ? { role: MemberRole.APPROVER } : {}),
        },
        call,
      ),
    removeMember: async (name) => required((await rpc.removeMember({ name }, call)).member),
    members: async () => (await rpc.listMembers({}, call)).members,
    leadName() {
      lead ??= self.members().then((all) => {
        const found = all.find((m) => m.role === MemberRole.LEAD);
        if (!found) throw new Error("the team has no lead");
        return found.name;
      });
      // A failed lookup (server down) is tried again next time.
      lead.catch(() => {
        lead = undefined;
      });
      return lead;
    },

    send(to, message, o = {}) {
      const request = {
        to,
        message,
        messageId: o.messageId ?? newMessageId(),
        ...(o.ttlMs !== undefined ? { ttl: durationFromMs(o.ttlMs) } : {}),
        ...(o.replyTo ? { replyTo: o.replyTo } : {}),
      };
      // Without a key a repeat could store the message twice: one attempt only.
      if (request.messageId === "") return rpc.send(request, call);
      return retryWhileUnavailable((ms) => rpc.send(request, { timeoutMs: ms }), {
        timeoutMs,
        backoff: options.sendBackoff,
      });
    },
    sendText: (to, text, o) => self.send(to, textMessage(text), o),
    broadcast: (text, o) => self.send("*", textMessage(text), o),

    requestShutdown: (member, o = {}) =>
      self.send(member, shutdownRequestMessage(o.reason ?? ""), o),
    approveShutdown: async (requestId, o) =>
      self.send(await self.leadName(), shutdownResponseMessage(requestId, true), o),
    rejectShutdown: async (requestId, reason, o) =>
      self.send(await self.leadName(), shutdownResponseMessage(requestId, false, reason), o),
    submitPlan: async (plan, o) => self.send(await self.leadName(), planRequestMessage(plan), o),
    approvePlan: async (requestId, o = {}) =>
      self.send(
        await requester(requestId, o),
        planResponseMessage(requestId, true, o.feedback ?? ""),
        o,
      ),
    rejectPlan: async (requestId, feedback = "", o = {}) =>
      self.send(await requester(requestId, o), planResponseMessage(requestId, false, feedback), o),
    notifyTask: async (report, o) =>
      self.send(await self.leadName(), taskNotificationMessage(report), o),

    claimTask: async (taskId, o = {}) =>
      self.send(await self.leadName(), taskClaimRequestMessage(taskId, o.note ?? ""), o),
    approveClaim: async (requestId, o = {}) =>
      self.send(await requester(requestId, o), taskClaimResponseMessage(requestId, true), o),
    rejectClaim: async (requestId, reason, o = {}) =>
      self.send(
        await requester(requestId, o),
        taskClaimResponseMessage(requestId, false, reason),
        o,
      ),
    assignTask: (taskId, member, o = {}) =>
      self.send(member, taskAssignMessage(taskId, o.note ?? ""), o),
    handOffTask: (taskId, member, note, o) =>
      self.send(member, taskHandoffRequestMessage(taskId, note), o),
    acceptHandoff: async (requestId, o = {}) =>
      self.send(await requester(requestId, o), taskHandoffResponseMessage(requestId, true), o),
    rejectHandoff: async (requestId, reason, o = {}) =>
      self.send(
        await requester(requestId, o),
        taskHandoffResponseMessage(requestId, false, reason),
        o,
      ),
    requestSignoff: async (taskId, result, o = {}) =>
      self.send(
        await self.leadName(),
        resultSignoffRequestMessage(taskId, result, o.summary ?? ""),
        o,
      ),
    approveSignoff: async (requestId, o = {}) =>
      self.send(
        await requester(requestId, o),
        resultSignoffResponseMessage(requestId, true, o.feedback ?? ""),
        o,
      ),
    rejectSignoff: async (requestId, feedback, o = {}) =>
      self.send(
        await requester(requestId, o),
        resultSignoffResponseMessage(requestId, false, feedback),
        o,
      ),
    createTask: async (subject, o = {}) =>
      required(
        (
          await rpc.createTask(
            {
              subject,
              taskId: o.taskId ?? "",
              description: o.description ?? "",
              activeForm: o.activeForm ?? "",
              blockedBy: o.blockedBy ?? [],
            },
            call,
          )
        ).task,
      ),
    updateTask: async (taskId, c) =>
      required(
        (
          await rpc.updateTask(
            {
              taskId,
              ...(c.subject !== undefined ? { subject: c.subject } : {}),
              ...(c.description !== undefined ? { description: c.description } : {}),
              ...(c.activeForm !== undefined ? { activeForm: c.activeForm } : {}),
              addBlockedBy: c.addBlockedBy ?? [],
              removeBlockedBy: c.removeBlockedBy ?? [],
              addBlocks: c.addBlocks ?? [],
              removeBlocks: c.removeBlocks ?? [],
              ...(c.status ? { status: taskProgressOf(c.status) } : {}),
            },
            call,
          )
        ).task,
      ),
    deleteTask: async (taskId) => required((await rpc.deleteTask({ taskId }, call)).task),
    getTask: (taskId) => rpc.getTask({ taskId }, call),
    listTasks: (f = {}) =>
      rpc.listTasks(
        {
          owner: f.owner ?? "",
          ...(f.state ? { state: taskStateOf(f.state) } : {}),
          ...(f.status ? { status: taskProgressOf(f.status) } : {}),
          ready: f.ready ?? false,
          blocked: f.blocked ?? false,
          pageSize: f.pageSize ?? 0,
          pageToken: f.pageToken ?? "",
        },
        call,
      ),

    listAttempts: (f = {}) =>
      rpc.listAttempts(
        {
          member: f.member ?? "",
          ...(f.outcome ? { outcome: attemptOutcomeOf(f.outcome) } : {}),
          requestId: f.requestId ?? "",
          pageSize: f.pageSize ?? 0,
          pageToken: f.pageToken ?? "",
        },
        call,
      ),
    acquireLease: async (resource, o = {}) =>
      required(
        (
          await rpc.acquireLease(
            {
              resource,
              ...(o.mode ? { mode: leaseModeOf(o.mode) } : {}),
              ttlSeconds: o.ttlSeconds ?? 0,
              reason: o.reason ?? "",
            },
            call,
          )
        ).lease,
      ),
    renewLease: async (leaseId, ttlSeconds = 0) =>
      required((await rpc.renewLease({ leaseId, ttlSeconds }, call)).lease),
    releaseLease: async (leaseId, reason = "") =>
      required((await rpc.releaseLease({ leaseId, reason }, call)).lease),
    listLeases: async (f = {}) =>
      (await rpc.listLeases({ holder: f.holder ?? "", resource: f.resource ?? "" }, call)).leases,
    getRequest: async (requestId) => required((await rpc.getRequest({ requestId }, call)).request),
    listRequests: (f = {}) =>
      rpc.listRequests(
        {
          ...(f.status ? { status: requestStatusOf(f.status) } : {}),
          ...(f.kind ? { kind: requestKindOf(f.kind) } : {}),
          party: f.party ?? "",
          pageSize: f.pageSize ?? 0,
          pageToken: f.pageToken ?? "",
        },
        call,
      ),
    async awaitRequest(requestId, o = {}) {
      const waitMs = Math.ceil(o.timeoutMs ?? 60_000);
      // The server answers at `timeout`; the call's own deadline leaves it room to.
      const res = await rpc.awaitRequest(
        { requestId, timeout: durationFromMs(waitMs) },
        { timeoutMs: waitMs + timeoutMs },
      );
      return required(res.request);
    },
    cancelRequest: async (requestId) =>
      required((await rpc.cancelRequest({ requestId }, call)).request),

    readInbox: (o = {}) =>
      rpc.readInbox(
        {
          ...(o.afterSeq !== undefined ? { afterSeq: BigInt(o.afterSeq) } : {}),
          limit: o.limit ?? 0,
          ack: o.ack ?? false,
        },
        call,
      ),
    ack: async (seq) => (await rpc.ack({ seq: BigInt(seq) }, call)).ackedSeq,
    inbox: (o) => createInbox(rpc, o),
    watch: (o) => createTeamWatch(rpc, o),
  };
  return self;
}

/** The server always sets these fields; a missing one is a broken server, not a refusal. */
function required<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("the server's response lacks a required field");
  return value;
}
