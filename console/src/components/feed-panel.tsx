import type { FeedStatus } from "../feed.js";
import { feedRows } from "../feed-lines.js";
import { threadOfEvent } from "../history.js";
import { refusalText } from "../refusal.js";
import { FEED_LINES, type TeamState } from "../team-state.js";
import { dateTime, isoTime } from "../words.js";
import { OpensThread } from "./opens-thread.js";

/** The team's feed; a click on a message's or a request's row opens its thread. */
export function FeedPanel({
  state,
  onOpenThread,
}: {
  state: TeamState;
  onOpenThread(threadId: string): void;
}) {
  return (
    <section id="feed" class="panel">
      <h2>
        Team feed <FeedBadge status={state.status} />
      </h2>
      {state.events.length === 0 && <p class="empty">No events yet.</p>}
      <ol class="events">
        {feedRows(state.events).map(({ event, line }) => {
          const thread = threadOfEvent(event, state.events);
          return (
            <li
              key={String(event.position)}
              class={`event kind-${line.kind}`}
              data-position={String(event.position)}
              data-kind={line.kind}
              data-thread-id={thread}
            >
              <OpensThread thread={thread} onOpen={onOpenThread}>
                <time dateTime={isoTime(event.at)} title={isoTime(event.at)}>
                  {dateTime(event.at)}
                </time>
                <span class="tag">{line.kind}</span>
                <span class="subject">{line.subject}</span>
                <span class="detail">{line.detail}</span>
              </OpensThread>
            </li>
          );
        })}
      </ol>
      {state.events.length >= FEED_LINES && (
        <p class="hint">The newest {FEED_LINES} events; `team watch` shows them all.</p>
      )}
    </section>
  );
}

/** live / connecting / retrying / ended, with what broke; data-* for scripts and tests. */
export function FeedBadge({ status, id = "feed-status" }: { status: FeedStatus; id?: string }) {
  const text =
    status.state === "live"
      ? "live"
      : status.state === "connecting"
        ? "connecting…"
        : status.state === "retrying"
          ? `reconnecting (attempt ${status.attempt}): ${refusalText(status.error)}`
          : `ended: ${refusalText(status.error)}`;
  return (
    <span
      id={id}
      class={`badge ${status.state}`}
      data-state={status.state}
      data-connects={String(status.connects)}
    >
      {text}
    </span>
  );
}
