import { describeMessage } from "@team-protocols/client/describe.js";
import type { SearchHit } from "@team-protocols/contract/team/v1/history_pb.js";
import { useState } from "preact/hooks";
import { snippetParts } from "../history.js";
import { refusalText } from "../refusal.js";
import type { Session } from "../session-state.js";
import { dateTime, isoTime } from "../words.js";
import { OpensThread } from "./opens-thread.js";

/**
 * Full-text search over what the signed-in member may read (SearchMessages, as that member):
 * the hits best first, each with its snippet (the matching words highlighted), who wrote it
 * to whom, its kind and time. A click on a hit opens its thread. A refusal (a query too long,
 * …) is shown as the server wrote it.
 */
export function SearchPanel({
  session,
  onOpenThread,
}: {
  session: Session;
  onOpenThread(threadId: string): void;
}) {
  const [query, setQuery] = useState("");
  const [hits, setHits] = useState<SearchHit[]>();
  const [more, setMore] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();

  const search = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const r = await session.rpc.searchMessages({ query });
      setHits(r.hits);
      setMore(r.nextPageToken !== "");
    } catch (err) {
      setHits(undefined);
      setError(refusalText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section id="search" class="panel">
      <h2>Search the messages</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void search();
        }}
      >
        <input
          name="query"
          type="search"
          placeholder='parser bug, "exact phrase", lexer or parser, -flaky'
          value={query}
          onInput={(e) => setQuery((e.target as HTMLInputElement).value)}
        />
        <button type="submit" class="search" disabled={busy}>
          Search
        </button>
      </form>
      {error && (
        <p class="refusal" role="alert">
          {error}
        </p>
      )}
      {hits && hits.length === 0 && <p class="empty">Nothing found.</p>}
      {hits && hits.length > 0 && (
        <ol class="events results">
          {hits.map((h, i) => {
            const e = h.envelope;
            return (
              <li
                key={`${e?.id}-${e?.to}-${i}`}
                class="event hit"
                data-id={e?.id}
                data-thread-id={e?.threadId}
                data-rank={String(i + 1)}
              >
                <OpensThread thread={e?.threadId || undefined} onOpen={onOpenThread}>
                  <time dateTime={isoTime(e?.sentAt)} title={isoTime(e?.sentAt)}>
                    {dateTime(e?.sentAt)}
                  </time>
                  <span class="tag">{e?.message?.kind.case ?? ""}</span>
                  <span class="subject">
                    <span class="who">{`${e?.from || "server"} → ${e?.to}`}</span>
                  </span>
                  <span class="detail snippet">
                    {h.snippet
                      ? snippetParts(h.snippet).map((p, j) =>
                          p.hit ? <mark key={j}>{p.text}</mark> : p.text,
                        )
                      : describeMessage(e?.message)}
                  </span>
                </OpensThread>
              </li>
            );
          })}
        </ol>
      )}
      {more && <p class="hint">The best {hits?.length}; `team search` pages through the rest.</p>}
    </section>
  );
}
