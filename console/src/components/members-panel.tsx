import { shutdownRequestMessage } from "@team-protocols/client/messages.js";
import {
  leaseModeName,
  memberRoleName,
  memberStatusName,
  permissionModeName,
  presenceName,
  seenViaName,
} from "@team-protocols/client/names.js";
import { MemberRole, MemberStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { Member } from "@team-protocols/contract/team/v1/records_pb.js";
import { useState } from "preact/hooks";
import { refusalText } from "../refusal.js";
import type { Session } from "../session-state.js";
import type { TeamState } from "../team-state.js";
import { clockTime, isoTime } from "../words.js";
import { AddMember } from "./add-member.js";

interface Props {
  session: Session;
  state: TeamState;
  /**
   * The lead may ask a teammate to stop (a shutdown_request it answers) and force-stop
   * members (RemoveMember); nobody else sees the buttons.
   */
  mayStop: boolean;
}

export function MembersPanel({ session, state, mayStop }: Props) {
  return (
    <section id="members" class="panel">
      <h2>Members</h2>
      {state.membersError && (
        <p class="refusal" role="alert">
          {state.membersError}
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Role</th>
            <th>Status</th>
            <th>Mode</th>
            <th>Presence</th>
            <th>Last seen</th>
            {mayStop && <th />}
          </tr>
        </thead>
        <tbody>
          {state.members.map((m) => (
            <MemberRow key={m.name} member={m} session={session} state={state} mayStop={mayStop} />
          ))}
        </tbody>
      </table>
      {mayStop && <AddMember session={session} state={state} />}
      <LeasesTable state={state} />
    </section>
  );
}

/** The team's live leases: what each member holds, and until when (ListLeases). */
function LeasesTable({ state }: { state: TeamState }) {
  return (
    <div id="leases">
      <h3>Leases</h3>
      {state.leasesError && (
        <p class="refusal" role="alert">
          {state.leasesError}
        </p>
      )}
      {state.leases.length === 0 ? (
        <p class="empty">No leases held.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Resource</th>
              <th>Holder</th>
              <th>Mode</th>
              <th>Expires</th>
            </tr>
          </thead>
          <tbody>
            {state.leases.map((l) => (
              <tr key={l.leaseId} data-lease={l.leaseId} title={l.reason}>
                <td class="resource">{l.resource}</td>
                <td class="holder">{l.holder}</td>
                <td class="lease-mode">{leaseModeName(l.mode)}</td>
                <td class="expires" title={isoTime(l.expiresAt)}>
                  {clockTime(l.expiresAt)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function MemberRow({ member, session, state, mayStop }: Props & { member: Member }) {
  const [confirming, setConfirming] = useState(false);
  const [asking, setAsking] = useState(false);
  const [reason, setReason] = useState("");
  const [asked, setAsked] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const stoppable =
    mayStop && member.status === MemberStatus.ACTIVE && member.role !== MemberRole.LEAD;
  // The shutdown protocol is the lead's to a teammate (shutdown-to-teammate): the teammate
  // answers, and stops itself when it approves.
  const askable = stoppable && member.role === MemberRole.TEAMMATE;

  const ask = async () => {
    setBusy(true);
    try {
      const r = await session.rpc.send({
        to: member.name,
        message: shutdownRequestMessage(reason.trim()),
      });
      setAsking(false);
      setReason("");
      setAsked(r.requestId);
      setError(undefined);
      state.reloadPending();
    } catch (err) {
      setError(refusalText(err));
    } finally {
      setBusy(false);
    }
  };

  const stop = async () => {
    setBusy(true);
    try {
      await session.rpc.removeMember({ name: member.name });
      setConfirming(false);
      setError(undefined);
      state.reloadMembers();
    } catch (err) {
      setError(refusalText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <tr data-member={member.name}>
      <td class="name">{member.name}</td>
      <td class="role">{memberRoleName(member.role)}</td>
      <td class={`status ${memberStatusName(member.status)}`}>{memberStatusName(member.status)}</td>
      <td class="mode">{permissionModeName(member.permissionMode)}</td>
      <td class={`presence ${presenceName(member.presence)}`}>{presenceName(member.presence)}</td>
      <td
        class="last-seen"
        title={
          member.lastSeenAt
            ? `${isoTime(member.lastSeenAt)} via ${seenViaName(member.lastSeenVia)}`
            : ""
        }
      >
        {clockTime(member.lastSeenAt)}
        {member.lastSeenAt ? ` (${seenViaName(member.lastSeenVia)})` : ""}
      </td>
      {mayStop && (
        <td class="actions">
          {askable && !asking && !confirming && (
            <button
              type="button"
              class="ask-stop"
              title="shutdown_request: the teammate answers, and stops if it agrees"
              onClick={() => setAsking(true)}
            >
              Ask to stop
            </button>
          )}
          {askable && asking && (
            <form
              class="ask"
              onSubmit={(e) => {
                e.preventDefault();
                void ask();
              }}
            >
              <input
                class="reason"
                placeholder="Why (optional; the teammate is told)"
                value={reason}
                onInput={(e) => setReason((e.target as HTMLInputElement).value)}
              />
              <button type="submit" class="send-ask" disabled={busy}>
                Ask {member.name} to stop
              </button>
              <button type="button" onClick={() => setAsking(false)}>
                Cancel
              </button>
            </form>
          )}
          {asked && !asking && (
            <span class="asked" data-request-id={asked}>
              asked ({asked})
            </span>
          )}
          {stoppable && !confirming && !asking && (
            <button
              type="button"
              class="stop"
              title="RemoveMember: the token is revoked and the streams end at once"
              onClick={() => setConfirming(true)}
            >
              Stop
            </button>
          )}
          {stoppable && confirming && (
            <span class="confirm">
              <button type="button" class="danger confirm-stop" disabled={busy} onClick={stop}>
                Stop {member.name} now
              </button>
              <button type="button" onClick={() => setConfirming(false)}>
                Keep
              </button>
            </span>
          )}
          {error && (
            <span class="refusal" role="alert">
              {error}
            </span>
          )}
        </td>
      )}
    </tr>
  );
}
