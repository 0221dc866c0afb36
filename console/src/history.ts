import type { TeamEvent } from "@team-protocols/contract/team/v1/feed_pb.js";

/**
 * A search hit's snippet in pieces: the server marks each matching word «like this»; the
 * marked pieces are shown highlighted. Text only: nothing of a message is ever read as HTML.
 */
export function snippetParts(snippet: string): { text: string; hit: boolean }[] {
  const parts: { text: string; hit: boolean }[] = [];
  let last = 0;
  for (const m of snippet.matchAll(/«([^»]*)»/g)) {
    if (m.index > last) parts.push({ text: snippet.slice(last, m.index), hit: false });
    parts.push({ text: m[1] ?? "", hit: true });
    last = m.index + m[0].length;
  }
  if (last < snippet.length) parts.push({ text: snippet.slice(last), hit: false });
  return parts;
}

/**
 * The thread a feed row opens: a message's own; for a request's row (which stands for its
 * messages, see feed-lines.ts) the thread of one of its messages on the page, else the thread
 * named after the request, which is its thread unless it replied to a message. Member and
 * task events are no message: they open nothing.
 */
export function threadOfEvent(event: TeamEvent, events: TeamEvent[]): string | undefined {
  const c = event.change;
  if (c.case === "envelope") return c.value.envelope?.threadId || undefined;
  if (c.case !== "request" || !c.value.request) return undefined;
  const requestId = c.value.request.requestId;
  for (const e of events)
    if (e.change.case === "envelope" && e.change.value.envelope?.requestId === requestId)
      return e.change.value.envelope.threadId || requestId;
  return requestId;
}
