import {
  describePresence,
  describeRequest,
  instant,
  requestStatusWord,
} from "@team-protocols/client/describe.js";
import type { Identity } from "@team-protocols/client/identity.js";
import {
  attemptOutcomeName,
  memberRoleName,
  memberStatusName,
  permissionModeName,
  requestKindName,
  requestKindNames,
  requestStatusName,
  requestStatusNames,
} from "@team-protocols/client/names.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import { MessageSchema } from "@team-protocols/contract/team/v1/message_pb.js";
import {
  AttemptSchema,
  EnvelopeSchema,
  MemberSchema,
  type RequestRecord,
  RequestRecordSchema,
} from "@team-protocols/contract/team/v1/records_pb.js";
import { SendResponseSchema } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { z } from "zod";
import { registerHistoryTools } from "./history-tools.js";
import { registerLeaseTools } from "./lease-tools.js";
import { messageInput, messageProblem, toMessageInit } from "./message-input.js";
import { plain } from "./plain.js";
import { registerTaskTools } from "./task-tools.js";
import type { ToolRegistry } from "./tool-registry.js";
import { guarded, ok } from "./tool-result.js";
import {
  DEFAULT_WAIT_SECONDS,
  type InboxCursor,
  MAX_WAIT_SECONDS,
  waitForMessages,
} from "./wait-for-messages.js";

export interface ToolContext {
  client: TeamClient;
  me: Identity;
  cursor: InboxCursor;
  /** The MCP configuration a new member pastes into its agent runtime (add_member). */
  configFor(token: string, name: string): unknown;
}

const request = (r: RequestRecord) => plain(RequestRecordSchema, r);
/** One request in a list: "req_… plan_approval worker → team-lead pending (task "t-1")". */
const requestLine = (r: RequestRecord) =>
  `${r.requestId} ${requestKindName(r.kind)} ${r.from} → ${r.to} ${requestStatusWord(r)}${taskOf(r) ? ` (task "${taskOf(r)}")` : ""}`;
const taskOf = (r: RequestRecord): string => {
  const taskId = (r.request?.kind.value as { taskId?: unknown } | undefined)?.taskId;
  return typeof taskId === "string" ? taskId : "";
};
const requestIdInput = z.string().min(1).describe("A request_id, as send_message returned it.");

/**
 * The team's tools, over one member's client. Every rule is the server's: a tool only
 * translates, and a refusal comes back as an isError result starting with the rule id.
 * Lead-only tools are listed only for the lead; the server refuses them for anyone else. An
 * observer (read-only: it has no inbox and may not write) is listed the reading tools only.
 */
export function registerTeamTools(server: ToolRegistry, ctx: ToolContext): void {
  const { client, me } = ctx;
  const writes = me.role !== "observer";
  server.registerTool(
    "send_message",
    {
      listed: writes,
      description:
        `Send a message as ${me.name} (the lead is "${me.lead}"). Anyone may send text to a member, or to "*" (every other ` +
        "active member). Protocol messages: the lead sends shutdown_request to a teammate and " +
        "plan_approval_response to a teammate's plan; a teammate answers a shutdown_request with " +
        "shutdown_response (approving stops it: its token is revoked; rejecting needs a reason), " +
        "submits plan_approval_request to the lead, and reports task_notification to the lead. " +
        "Tasks: a teammate sends task_claim_request {task_id} to the lead, who answers " +
        "task_claim_response (approving makes the claimant the one owner) or gives a task " +
        "directly with task_assign to a teammate; the owner sends task_handoff_request to " +
        "another teammate (or the lead, to give it back), who answers task_handoff_response " +
        "{accept}; the owner asks the lead with result_signoff_request {task_id, result}, " +
        "answered by result_signoff_response (approve: done; reject: feedback, the owner keeps it). " +
        "The server refuses anything else (wrong role, wrong addressee, unknown or already " +
        "answered request_id, a reject without reason) with the rule id and how to fix it. " +
        "Returns where the message was stored and its request_id.",
      check: (args) => messageProblem(args.message),
      inputSchema: {
        to: z
          .string()
          .min(1)
          .describe('A member name, or "*" for every other active member (text only).'),
        message: messageInput,
        summary: z
          .string()
          .optional()
          .describe("A short preview of the message (kept for the transcript, not sent)."),
        reply_to: z
          .string()
          .optional()
          .describe('The id of the message this answers (its id="env_..."): same thread.'),
      },
    },
    ({ to, message, reply_to }) =>
      guarded(async () => {
        const init = toMessageInit(message);
        const res = await client.send(to, init, reply_to ? { replyTo: reply_to } : {});
        const where = res.deliveries.map((d) => `${d.to} #${d.seq}`).join(", ");
        const sent = plain(
          MessageSchema,
          init as Parameters<typeof plain<typeof MessageSchema>>[1],
        );
        // An answer names what it answered: the request, and the task it was about.
        const answered =
          typeof message === "object" && "request_id" in message
            ? await client.getRequest(message.request_id).catch(() => undefined)
            : undefined;
        const task = answered
          ? taskOf(answered)
          : typeof sent.task_id === "string"
            ? sent.task_id
            : "";
        const lines = [
          `Sent ${sent.type} to ${to}: stored in ${where || `${to} #${res.seq}`}.`,
          ...(answered
            ? [
                `It answers ${requestKindName(answered.kind)} request ${answered.requestId}${task ? ` (task "${task}")` : ""}, now ${requestStatusWord(answered)}.`,
              ]
            : []),
          ...(res.requestId && !answered
            ? [
                `It opened request ${res.requestId}${task ? ` (task "${task}")` : ""}: the answer arrives as a message (wait_for_messages).`,
              ]
            : []),
        ];
        return ok(lines.join("\n"), {
          ...plain(SendResponseSchema, res),
          ...(task ? { task_id: task } : {}),
          ...(answered ? { answered: request(answered) } : {}),
        });
      }),
  );

  server.registerTool(
    "wait_for_messages",
    {
      listed: writes,
      description:
        `Your (${me.name}'s) next messages, oldest first. Returns at once when messages are ` +
        "waiting; otherwise waits for one to arrive, up to timeout_seconds. Each protocol message " +
        "names its request_id and the exact answer expected (send it with send_message). " +
        "A message returned is acknowledged and not returned again.",
      inputSchema: {
        timeout_seconds: z
          .number()
          .min(0)
          .max(MAX_WAIT_SECONDS)
          .optional()
          .describe(
            `How long to wait when nothing is waiting (default ${DEFAULT_WAIT_SECONDS}, at most ${MAX_WAIT_SECONDS}).`,
          ),
        max: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .optional()
          .describe("At most this many messages (default 100)."),
      },
    },
    ({ timeout_seconds, max }, signal) =>
      guarded(async () => {
        const r = await waitForMessages(client, ctx.cursor, {
          timeoutSeconds: timeout_seconds ?? DEFAULT_WAIT_SECONDS,
          max: max ?? 100,
          signal,
        });
        // `text` holds every message as the model should read it (with the answer each
        // expects); `messages` the same envelopes as data, each message in the shape
        // send_message takes ({ type: "shutdown_request", reason }).
        return ok(r.text, {
          count: r.envelopes.length,
          seqs: r.envelopes.map((e) => String(e.seq)),
          messages: r.envelopes.map((e) => {
            const { message, team: _team, ...envelope } = plain(EnvelopeSchema, e);
            const task = ctx.cursor.reader.taskOf(e.requestId);
            return {
              ...envelope,
              from: e.from || "server",
              ...(task && !(message as { task_id?: string }).task_id ? { task_id: task } : {}),
              message,
            };
          }),
        });
      }),
  );

  server.registerTool(
    "list_members",
    {
      description:
        "The team's members (active and stopped) with role, status, permission mode and presence (online, idle or offline, and when and how the server last saw each); you are marked. Anyone may call it.",
    },
    () =>
      guarded(async () => {
        const members = await client.members();
        const lines = members.map(
          (m) =>
            `${m.name}: ${memberRoleName(m.role)}, ${memberStatusName(m.status)}, mode ${permissionModeName(m.permissionMode)}, ${describePresence(m)}${m.name === me.name ? " (you)" : ""}`,
        );
        return ok(lines.join("\n"), {
          you: me.name,
          members: members.map((m) => ({
            ...plain(MemberSchema, m),
            ...(m.name === me.name ? { you: true } : {}),
          })),
        });
      }),
  );

  server.registerTool(
    "whoami",
    {
      description:
        "Who you are in the team: its name, your member name, role and permission mode, and the lead's name (answers, plans and reports go to the lead).",
    },
    () =>
      guarded(async () => {
        const self = (await client.members()).find((m) => m.name === me.name);
        const mode = self ? permissionModeName(self.permissionMode) : "unspecified";
        const data = {
          ...(me.team ? { team: me.team } : {}),
          name: me.name,
          role: me.role,
          permission_mode: mode,
          lead: me.lead,
        };
        return ok(
          `You are ${me.name}, ${me.role === "lead" ? "the lead" : `a ${me.role}`}${me.team ? ` of team "${me.team}"` : ""}, permission mode ${mode}. The lead is ${me.lead}.`,
          data,
        );
      }),
  );

  server.registerTool(
    "get_request",
    {
      description:
        "One protocol request (shutdown, plan approval, task claim, assignment, handoff or sign-off) and its status. The lead sees the team's; a teammate only requests it is party to (others are refused).",
      inputSchema: { request_id: requestIdInput },
    },
    ({ request_id }) =>
      guarded(async () => {
        const r = await client.getRequest(request_id);
        return ok(requestText(r), { request: request(r) });
      }),
  );

  server.registerTool(
    "list_requests",
    {
      description: "Protocol requests, newest first. The lead sees the team's, a teammate its own.",
      inputSchema: {
        status: z.enum(requestStatusNames).optional().describe("Only requests in this status."),
        kind: z.enum(requestKindNames).optional().describe("Only this kind."),
      },
    },
    ({ status, kind }) =>
      guarded(async () => {
        const { requests } = await client.listRequests({
          ...(status ? { status } : {}),
          ...(kind ? { kind } : {}),
        });
        return ok(requests.map(requestLine).join("\n") || "No requests.", {
          requests: requests.map(request),
        });
      }),
  );

  server.registerTool(
    "await_request",
    {
      description:
        "Waits until a request leaves pending (answered, expired or canceled), or timeout_seconds pass, and returns it. Same visibility as get_request.",
      inputSchema: {
        request_id: requestIdInput,
        timeout_seconds: z
          .number()
          .min(0)
          .max(MAX_WAIT_SECONDS)
          .optional()
          .describe(
            `How long to wait (default ${DEFAULT_WAIT_SECONDS}, at most ${MAX_WAIT_SECONDS}).`,
          ),
      },
    },
    ({ request_id, timeout_seconds }) =>
      guarded(async () => {
        const r = await client.awaitRequest(request_id, {
          timeoutMs: (timeout_seconds ?? DEFAULT_WAIT_SECONDS) * 1000,
        });
        const still =
          requestStatusName(r.status) === "pending"
            ? "\nStill pending: call await_request again to keep waiting."
            : "";
        return ok(`${requestText(r)}${still}`, { request: request(r) });
      }),
  );

  server.registerTool(
    "cancel_request",
    {
      listed: writes,
      description:
        "Withdraws a pending request you sent. The server refuses it for someone else's request or one already answered.",
      inputSchema: { request_id: requestIdInput },
    },
    ({ request_id }) =>
      guarded(async () => {
        const r = await client.cancelRequest(request_id);
        return ok(`Canceled.\n${requestText(r)}`, { request: request(r) });
      }),
  );

  registerTaskTools(server, ctx);
  registerLeaseTools(server, ctx);
  registerHistoryTools(server, ctx);

  server.registerTool(
    "journal",
    {
      description:
        "The protocol journal, newest first: every protocol step attempted, accepted or refused (with the rule). The lead sees the team's; a teammate only its own (naming another member is refused).",
      inputSchema: {
        member: z.string().optional().describe("Only this member's attempts."),
        outcome: z.enum(["accepted", "refused"]).optional().describe("Only this outcome."),
      },
    },
    ({ member, outcome }) =>
      guarded(async () => {
        const { attempts } = await client.listAttempts({
          ...(member ? { member } : {}),
          ...(outcome ? { outcome } : {}),
        });
        const lines = attempts.map(
          (a) =>
            `${instant(a.at)} ${a.member} ${a.action}${a.to ? ` → ${a.to}` : ""}${a.requestId ? ` ${a.requestId}` : ""}: ${attemptOutcomeName(a.outcome)}${a.rule ? ` (${a.rule}: ${a.message})` : ""}`,
        );
        return ok(lines.join("\n") || "No attempts.", {
          attempts: attempts.map((a) => plain(AttemptSchema, a)),
        });
      }),
  );

  registerLeadTools(server, ctx, me.role === "lead");
}

/** A request as text: its fields, what was asked and the answer (describeRequest), and its task. */
function requestText(r: RequestRecord): string {
  const task = taskOf(r);
  return `${describeRequest(r)}${task ? `\ntask     ${task}` : ""}`;
}

/** Listed for the lead only; callable by anyone, and the server refuses them to a teammate. */
function registerLeadTools(server: ToolRegistry, ctx: ToolContext, listed: boolean): void {
  const { client } = ctx;
  server.registerTool(
    "add_member",
    {
      description:
        "Lead only: adds a teammate and returns its token (shown this once) and the MCP configuration to give its agent. The server refuses a taken or malformed name.",
      listed,
      inputSchema: {
        name: z.string().min(1).describe("The new member's name: ^[a-z0-9][a-z0-9._-]{0,63}$."),
      },
    },
    ({ name }) =>
      guarded(async () => {
        const res = await client.addMember(name);
        const config = ctx.configFor(res.token, name);
        return ok(
          `Added ${name}. Token (shown once): ${res.token}\nMCP configuration for ${name}:\n${JSON.stringify(config, null, 2)}`,
          { token: res.token, config },
        );
      }),
  );
  server.registerTool(
    "remove_member",
    {
      description:
        "Lead only: stops a teammate at once (its token is revoked, its pending requests end). Prefer a shutdown_request, which lets it finish. The lead cannot remove itself.",
      listed,
      inputSchema: { name: z.string().min(1).describe("The teammate to stop.") },
    },
    ({ name }) =>
      guarded(async () => {
        const m = await client.removeMember(name);
        return ok(`Removed ${name}: its token no longer works.`, {
          member: plain(MemberSchema, m),
        });
      }),
  );
}
