import { describeMessage } from "@team-protocols/client/describe.js";
import { answerMessage } from "@team-protocols/client/messages.js";
import { requestKindName } from "@team-protocols/client/names.js";
import { MemberRole, RequestKind } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { RequestRecord } from "@team-protocols/contract/team/v1/records_pb.js";
import { useState } from "preact/hooks";
import { refusalText } from "../refusal.js";
import { isApprover, type Session } from "../session-state.js";
import type { TeamState } from "../team-state.js";
import { clockTime, isoTime } from "../words.js";

interface Props {
  session: Session;
  state: TeamState;
  /**
   * false for an observer: no answer or withdraw buttons at all. (The server never addresses
   * an observer and it cannot ask, so this only keeps the page read-only should that change.)
   */
  mayAnswer: boolean;
}

export function RequestsPanel({ session, state, mayAnswer }: Props) {
  return (
    <section id="requests" class="panel">
      <h2>
        Pending requests <span class="count">{state.pending.length}</span>
      </h2>
      {state.pendingError && (
        <p class="refusal" role="alert">
          {state.pendingError}
        </p>
      )}
      {state.pending.length === 0 && <p class="empty">Nothing waits for an answer.</p>}
      {state.pending.map((r) => (
        <RequestCard
          key={r.requestId}
          request={r}
          session={session}
          state={state}
          mayAnswer={mayAnswer}
        />
      ))}
    </section>
  );
}

function RequestCard({ request, session, state, mayAnswer }: Props & { request: RequestRecord }) {
  const [rejecting, setRejecting] = useState(false);
  const [words, setWords] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  // Every answer goes back to the requester: a plan's, a claim's or a sign-off's to the
  // teammate who asked, a shutdown's to the lead who asked, a handoff's to the owner.
  const message = (approve: boolean) =>
    answerMessage(request.kind, request.requestId, approve, approve ? "" : words);
  // The addressee answers (an assignment takes none), an approver the lead's approvals for it;
  // the requester may withdraw. The server checks all of it again.
  const forLead = isApprover(session) && answersForLead(request, state);
  const answerable =
    mayAnswer && (request.to === session.you || forLead) && message(true) !== undefined;
  const withdrawable = mayAnswer && request.from === session.you;

  const act = async (call: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await call();
      setRejecting(false);
      state.reloadPending();
    } catch (err) {
      // The rule's sentence, e.g. "reason-on-reject: reason is required when rejecting…".
      setError(refusalText(err));
    } finally {
      setBusy(false);
    }
  };
  const answer = (approve: boolean) =>
    act(async () => {
      const m = message(approve);
      if (m) await session.rpc.send({ to: request.from, message: m });
    });

  return (
    <article
      class="request"
      data-request-id={request.requestId}
      data-kind={requestKindName(request.kind)}
    >
      <header>
        <b>{requestKindName(request.kind)}</b> {request.from} → {request.to}
        <span class="when" title={`expires ${isoTime(request.expiresAt)}`}>
          asked {clockTime(request.createdAt)}, expires {clockTime(request.expiresAt)}
        </span>
      </header>
      <div class="body">{describeMessage(request.request)}</div>
      {forLead && (
        <p class="on-behalf">
          You answer for {request.to}; both they and {request.from} see your answer.
        </p>
      )}
      <code class="id">{request.requestId}</code>
      {answerable && !rejecting && (
        <div class="buttons">
          <button type="button" class="approve" disabled={busy} onClick={() => answer(true)}>
            {request.kind === RequestKind.TASK_HANDOFF
              ? "Accept"
              : request.kind === RequestKind.PERMISSION
                ? "Allow"
                : "Approve"}
          </button>
          <button type="button" class="reject" disabled={busy} onClick={() => setRejecting(true)}>
            {request.kind === RequestKind.PERMISSION ? "Deny" : "Reject"}
          </button>
        </div>
      )}
      {answerable && rejecting && (
        <form
          class="rejection"
          onSubmit={(e) => {
            e.preventDefault();
            void answer(false);
          }}
        >
          <label>
            {rejectionLabel(request)}
            <textarea
              class="words"
              rows={3}
              value={words}
              onInput={(e) => setWords((e.target as HTMLTextAreaElement).value)}
            />
          </label>
          <button type="submit" class="send-rejection danger" disabled={busy}>
            {request.kind === RequestKind.PERMISSION ? "Send denial" : "Send rejection"}
          </button>
          <button type="button" onClick={() => setRejecting(false)}>
            Cancel
          </button>
        </form>
      )}
      {withdrawable && (
        <div class="buttons">
          <button
            type="button"
            class="withdraw"
            disabled={busy}
            onClick={() => act(() => session.rpc.cancelRequest({ requestId: request.requestId }))}
          >
            Withdraw
          </button>
        </div>
      )}
      {error && (
        <p class="refusal" role="alert">
          {error}
        </p>
      )}
    </article>
  );
}

/** What the words of a rejection are, for each kind (each kind's answer names them). */
function rejectionLabel(request: RequestRecord): string {
  switch (request.kind) {
    case RequestKind.PLAN_APPROVAL:
      return `Feedback for ${request.from} (blank: "Plan needs revision")`;
    case RequestKind.RESULT_SIGNOFF:
      return `What ${request.from} should change (required)`;
    case RequestKind.TASK_CLAIM:
    case RequestKind.TASK_HANDOFF:
      return `Why not (required; ${request.from} is told)`;
    case RequestKind.PERMISSION:
      return `Why not (required; ${request.from}'s runtime is told)`;
    default:
      return `Why ${request.from} keeps working (required)`;
  }
}

/** The approvals an approver answers: those addressed to the lead (the server checks again). */
const APPROVALS = new Set([
  RequestKind.PLAN_APPROVAL,
  RequestKind.PERMISSION,
  RequestKind.TASK_CLAIM,
  RequestKind.RESULT_SIGNOFF,
]);

function answersForLead(request: RequestRecord, state: TeamState): boolean {
  const lead = state.members.find((m) => m.role === MemberRole.LEAD)?.name;
  return lead !== undefined && request.to === lead && APPROVALS.has(request.kind);
}
