import { describeEvent } from "@team-protocols/client/describe-event.js";
import type { FeedStatus } from "../feed.js";
import { refusalText } from "../refusal.js";
import { FEED_LINES, type TeamState } from "../team-state.js";
import { clockTime, isoTime } from "../words.js";

export function FeedPanel({ state }: { state: TeamState }) {
  return (
    <section id="feed" class="panel">
      <h2>
        Team feed <FeedBadge status={state.status} />
      </h2>
      {state.events.length === 0 && <p class="empty">No events yet.</p>}
      <ol class="events">
        {state.events.map((event) => {
          const line = describeEvent(event);
          return (
            <li
              key={String(event.position)}
              class={`event kind-${line.kind}`}
              data-position={String(event.position)}
              data-kind={line.kind}
            >
              <time title={isoTime(event.at)}>{clockTime(event.at)}</time>
              <span class="tag">{line.kind}</span>
              <span class="subject">{line.subject}</span>
              <span class="detail">{line.detail}</span>
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
function FeedBadge({ status }: { status: FeedStatus }) {
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
      id="feed-status"
      class={`badge ${status.state}`}
      data-state={status.state}
      data-connects={String(status.connects)}
    >
      {text}
    </span>
  );
}
