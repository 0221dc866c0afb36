import { describeMessage } from "@team-protocols/client/describe.js";
import type { Envelope } from "@team-protocols/contract/team/v1/records_pb.js";
import { useEffect, useState } from "preact/hooks";
import { refusalText } from "../refusal.js";
import type { Session } from "../session-state.js";
import { dateTime, isoTime } from "../words.js";

/** GetThread's own ceiling on one page: the console shows one page, `team thread` pages on. */
const THREAD_PAGE = 1_000;

/**
 * One thread, oldest first, as the signed-in member may read it (GetThread). A broadcast is
 * one row per recipient's copy for the lead, as the feed shows it. A refusal (NotFound for a
 * thread with nothing this member may read) is shown as the server wrote it.
 */
export function ThreadPanel({
  session,
  threadId,
  onClose,
}: {
  session: Session;
  threadId: string;
  onClose(): void;
}) {
  const [envelopes, setEnvelopes] = useState<Envelope[]>();
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string>();

  useEffect(() => {
    let current = true;
    setEnvelopes(undefined);
    setError(undefined);
    session.rpc.getThread({ threadId, pageSize: THREAD_PAGE }).then(
      (r) => {
        if (!current) return;
        setEnvelopes(r.envelopes);
        setMore(r.nextPageToken !== "");
      },
      (err) => current && setError(refusalText(err)),
    );
    return () => {
      current = false;
    };
  }, [session, threadId]);

  return (
    <section id="thread" class="panel" data-thread-id={threadId}>
      <h2>
        Thread <code>{threadId}</code>{" "}
        <button type="button" class="close" onClick={onClose}>
          Close
        </button>
      </h2>
      {error && (
        <p class="refusal" role="alert">
          {error}
        </p>
      )}
      {!envelopes && !error && <p class="empty">Loading…</p>}
      {envelopes && (
        <ol class="events messages">
          {envelopes.map((e, i) => (
            <li
              key={`${e.id}-${e.to}-${String(e.seq)}`}
              class="event message"
              data-id={e.id}
              data-reply-to={e.replyTo || undefined}
              data-order={String(i + 1)}
            >
              <time dateTime={isoTime(e.sentAt)} title={isoTime(e.sentAt)}>
                {dateTime(e.sentAt)}
              </time>
              <span class="tag">{e.message?.kind.case ?? ""}</span>
              <span class="subject">
                <span class="who">{`${e.from || "server"} → ${e.to}`}</span>
                {e.replyTo && <span class="reply-to"> (in reply to {e.replyTo})</span>}
              </span>
              <span class="detail">{describeMessage(e.message)}</span>
            </li>
          ))}
        </ol>
      )}
      {more && <p class="hint">The first {THREAD_PAGE}; `team thread` pages through the rest.</p>}
    </section>
  );
}
