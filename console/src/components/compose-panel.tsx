import { textMessage } from "@team-protocols/client/messages.js";
import { MemberRole, MemberStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import { useState } from "preact/hooks";
import { refusalText } from "../refusal.js";
import type { Session } from "../session-state.js";
import type { TeamState } from "../team-state.js";

/** Everyone: Send's `to` for a broadcast (every active member but the sender and observers). */
const EVERYONE = "*";

/**
 * Write to one member, or to everyone, as the signed-in member: a text message (Send). The
 * server checks it like any other Send (an observer is refused, so it has no such form).
 */
export function ComposePanel({ session, state }: { session: Session; state: TeamState }) {
  // Observers receive no messages (they watch the feed), so they are no one to write to.
  const others = state.members.filter(
    (m) =>
      m.name !== session.you && m.status === MemberStatus.ACTIVE && m.role !== MemberRole.OBSERVER,
  );
  const [to, setTo] = useState("");
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [sent, setSent] = useState<string>();
  const [error, setError] = useState<string>();
  const addressee = to || others[0]?.name || EVERYONE;

  const send = async () => {
    if (text.trim() === "") {
      setError("Write something first.");
      return;
    }
    setBusy(true);
    setError(undefined);
    setSent(undefined);
    try {
      const r = await session.rpc.send({ to: addressee, message: textMessage(text) });
      setSent(
        addressee === EVERYONE
          ? `Sent to everyone (${r.deliveries.length} inbox${r.deliveries.length === 1 ? "" : "es"}).`
          : `Sent to ${addressee} (#${r.seq} in its inbox).`,
      );
      setText("");
    } catch (err) {
      setError(refusalText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section id="compose" class="panel">
      <h2>Write as {session.you}</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        <label>
          To
          <select
            name="to"
            value={addressee}
            onChange={(e) => setTo((e.target as HTMLSelectElement).value)}
          >
            {others.map((m) => (
              <option key={m.name} value={m.name}>
                {m.name}
              </option>
            ))}
            <option value={EVERYONE}>everyone (broadcast)</option>
          </select>
        </label>
        <textarea
          name="text"
          rows={3}
          placeholder="A text message"
          value={text}
          onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        />
        <button type="submit" class="send" disabled={busy}>
          Send
        </button>
        {sent && <span class="sent">{sent}</span>}
        {error && (
          <span class="refusal" role="alert">
            {error}
          </span>
        )}
      </form>
    </section>
  );
}
