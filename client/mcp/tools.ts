import { type DescMessage, type MessageShape, toJson } from "@bufbuild/protobuf";
import type { Identity } from "@team-protocols/client/identity.js";
import {
  memberRoleName,
  memberStatusName,
  permissionModeName,
  requestKindNames,
  requestStatusNames,
} from "@team-protocols/client/names.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import { MemberSchema, RequestRecordSchema } from "@team-protocols/contract/team/v1/records_pb.js";
import {
  ListAttemptsResponseSchema,
  ListRequestsResponseSchema,
  SendResponseSchema,
} from "@team-protocols/contract/team/v1/team_service_pb.js";
import { z } from "zod";
import { messageInput, toMessageInit } from "./message-input.js";
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

const json = <Desc extends DescMessage>(schema: Desc, m: MessageShape<Desc>) =>
  toJson(schema, m, { alwaysEmitImplicit: true }) as Record<string, unknown>;
const show = (value: unknown) => JSON.stringify(value, null, 2);
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
      },
    },
    ({ to, message }) =>
      guarded(async () => {
        const res = await client.send(to, toMessageInit(message));
        const where = res.deliveries.map((d) => `${d.to} #${d.seq}`).join(", ");
        return ok(
          `Stored in ${where || `${to} #${res.seq}`}.${res.requestId ? ` request_id: ${res.requestId}` : ""}`,
          json(SendResponseSchema, res),
        );
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
        return ok(r.text, {
          count: r.envelopes.length,
          seqs: r.envelopes.map((e) => String(e.seq)),
          // For programs driving the tools (the demo's scripted MCP teammate).
          messages: r.envelopes.map((e) => ({
            seq: String(e.seq),
            from: e.from,
            type: e.message?.kind.case ?? "",
            request_id: e.requestId,
          })),
        });
      }),
  );

  server.registerTool(
    "list_members",
    {
      description:
        "The team's members (active and stopped) with role, status and permission mode. Anyone may call it.",
    },
    () =>
      guarded(async () => {
        const members = await client.members();
        const lines = members.map(
          (m) =>
            `${m.name}: ${memberRoleName(m.role)}, ${memberStatusName(m.status)}, mode ${permissionModeName(m.permissionMode)}${m.name === me.name ? " (you)" : ""}`,
        );
        return ok(lines.join("\n"), { members: members.map((m) => json(MemberSchema, m)) });
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
        const r = json(RequestRecordSchema, await client.getRequest(request_id));
        return ok(show(r), r);
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
        const r = json(
          ListRequestsResponseSchema,
          await client.listRequests({ ...(status ? { status } : {}), ...(kind ? { kind } : {}) }),
        );
        return ok(show(r), r);
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
        const r = json(
          RequestRecordSchema,
          await client.awaitRequest(request_id, {
            timeoutMs: (timeout_seconds ?? DEFAULT_WAIT_SECONDS) * 1000,
          }),
        );
        return ok(show(r), r);
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
        const r = json(RequestRecordSchema, await client.cancelRequest(request_id));
        return ok(show(r), r);
      }),
  );

  registerTaskTools(server, ctx);

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
        const r = json(
          ListAttemptsResponseSchema,
          await client.listAttempts({
            ...(member ? { member } : {}),
            ...(outcome ? { outcome } : {}),
          }),
        );
        return ok(show(r), r);
      }),
  );

  registerLeadTools(server, ctx, me.role === "lead");
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
          `Added ${name}. Token (shown once): ${res.token}\nMCP configuration for ${name}:\n${show(config)}`,
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
        const m = json(MemberSchema, await client.removeMember(name));
        return ok(`Removed ${name}.`, m);
      }),
  );
}
