import { describeMessage } from "@team-protocols/client/describe.js";
import type { Session } from "../session-state.js";
import { FEED_LINES, type TeamState } from "../team-state.js";
import { dateTime, isoTime } from "../words.js";
import { FeedBadge } from "./feed-panel.js";
import { OpensThread } from "./opens-thread.js";

/**
 * A teammate's or an approver's own inbox, where the lead and observers have the team feed
 * (WatchTeam is theirs only): every message addressed to the member, live, newest first.
 * Reading here acks nothing; the member's agent reads from its own cursor. A click on a
 * message opens its thread.
 */
export function InboxPanel({
  session,
  state,
  onOpenThread,
}: {
  session: Session;
  state: TeamState;
  onOpenThread(threadId: string): void;
}) {
  return (
    <section id="inbox" class="panel">
      <h2>
        Inbox of {session.you} <FeedBadge id="inbox-status" status={state.status} />
      </h2>
      {state.inbox.length === 0 && <p class="empty">No messages yet.</p>}
      <ol class="events">
        {state.inbox.map((e) => (
          <li
            key={String(e.seq)}
            class={`event kind-${e.requestId ? "request" : "message"}`}
            data-seq={String(e.seq)}
            data-thread-id={e.threadId || undefined}
            data-request-id={e.requestId || undefined}
          >
            <OpensThread thread={e.threadId || undefined} onOpen={onOpenThread}>
              <time dateTime={isoTime(e.sentAt)} title={isoTime(e.sentAt)}>
                {dateTime(e.sentAt)}
              </time>
              <span class="tag">#{String(e.seq)}</span>
              <span class="subject">
                {e.from || "server"} → {e.to}
              </span>
              <span class="detail">{describeMessage(e.message)}</span>
            </OpensThread>
          </li>
        ))}
      </ol>
      {state.inbox.length >= FEED_LINES && (
        <p class="hint">The newest {FEED_LINES} messages; `team inbox` reads them all.</p>
      )}
    </section>
  );
}
