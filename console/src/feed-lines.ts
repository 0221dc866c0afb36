import { describeMessage } from "@team-protocols/client/describe.js";
import { describeEvent, type FeedLine } from "@team-protocols/client/describe-event.js";
import { RequestStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { TeamEvent } from "@team-protocols/contract/team/v1/feed_pb.js";

/**
 * The feed as the console lists it: one row per protocol step. A step is two events on the
 * server, the message stored in an inbox (the request, the answer, the lead's copy of an
 * approver's answer, a request_update) and the request's change; the console shows the
 * request's row, with the message's words in it, and leaves out the message rows of a request
 * whose change is on the page. Text and task messages are rows of their own. `events` are
 * newest first, and so is the answer.
 */
export function feedRows(events: TeamEvent[]): { event: TeamEvent; line: FeedLine }[] {
  const requests = new Set<string>();
  for (const e of events)
    if (e.change.case === "request" && e.change.value.request)
      requests.add(e.change.value.request.requestId);
  const rows: { event: TeamEvent; line: FeedLine }[] = [];
  for (const event of events) {
    const c = event.change;
    if (c.case === "envelope" && requests.has(c.value.envelope?.requestId ?? "")) continue;
    const line = describeEvent(event);
    if (c.case === "request" && c.value.request) {
      const r = c.value.request;
      // Pending: what was asked; final: the answer, if there is one (an expired or canceled
      // request has none), and who gave it when it was not the addressee.
      const words =
        r.status === RequestStatus.PENDING
          ? describeMessage(r.request)
          : r.response
            ? describeMessage(r.response)
            : "";
      const by = r.answeredBy && r.answeredBy !== r.to ? ` (answered by ${r.answeredBy})` : "";
      rows.push({
        event,
        line: { ...line, detail: `${line.detail}${by}${words ? `: ${words}` : ""}` },
      });
    } else rows.push({ event, line });
  }
  return rows;
}
