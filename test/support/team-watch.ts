import { ConnectError } from "@connectrpc/connect";
import { expect } from "vitest";
import { RequestKind, RequestStatus, TaskChange } from "../../gen/team/v1/enums_pb.js";
import type { TeamEvent } from "../../gen/team/v1/feed_pb.js";
import type { WatchTeamRequest, WatchTeamResponse } from "../../gen/team/v1/team_service_pb.js";
import type { App } from "../../server/app.js";
import type { TeamClient } from "./harness.js";
import { waitFor } from "./wait.js";

type WatchInit = Partial<Pick<WatchTeamRequest, "cursor" | "fromNow">>;

/** A WatchTeam stream read in the background: what it delivered so far, and how it ended. */
export interface Watcher {
  readonly responses: WatchTeamResponse[];
  /** The events only (heartbeats left out). */
  events(): TeamEvent[];
  /** Resolves once `check` holds for what was received (it is re-checked on every response). */
  until(what: string, check: (w: Watcher) => boolean): Promise<void>;
  /** Resolves with how the stream ended: undefined for a clean end, else the error. */
  readonly ended: Promise<ConnectError | undefined>;
  stop(): void;
}

export function watch(client: TeamClient, request: WatchInit = {}): Watcher {
  const abort = new AbortController();
  const responses: WatchTeamResponse[] = [];
  const waiting = new Set<() => void>();
  const tell = () => {
    for (const w of [...waiting]) w();
  };
  const ended = (async () => {
    try {
      for await (const r of client.watchTeam(request, { signal: abort.signal })) {
        responses.push(r);
        tell();
      }
      return undefined;
    } catch (err) {
      return ConnectError.from(err);
    } finally {
      tell();
    }
  })();
  let done = false;
  void ended.then(() => {
    done = true;
  });
  const watcher: Watcher = {
    responses,
    events: () => responses.flatMap((r) => (r.kind.case === "event" ? [r.kind.value] : [])),
    until(what, check) {
      return new Promise((resolve, reject) => {
        const look = () => {
          if (check(watcher)) {
            waiting.delete(look);
            resolve();
          } else if (done) {
            waiting.delete(look);
            reject(new Error(`the stream ended before ${what}`));
          }
        };
        waiting.add(look);
        look();
        void ended.then(look);
      });
    },
    ended,
    stop: () => abort.abort(),
  };
  return watcher;
}

/**
 * Resolves once `app` holds exactly `count` WatchTeam streams and every one is parked, read
 * up to date: an event committed from then on can only reach them live. Streams a test
 * stopped before are waited out (their release on the server is asynchronous).
 */
export async function watchersParked(app: App, count: number): Promise<void> {
  await waitFor(
    `${count} WatchTeam streams parked (${app.teams.size} open, ${app.teams.waiting} parked)`,
    () => app.teams.size === count && app.teams.waiting === count,
    { intervalMs: 5, timeoutMs: 20_000 },
  );
}

/** A stable key per event: what it is about, for comparing two streams' sets. */
export function eventKey(e: TeamEvent): string {
  switch (e.change.case) {
    case "envelope":
      return `envelope ${e.change.value.recipient}#${e.change.value.envelope?.seq}`;
    case "request":
      return `request ${e.change.value.request?.requestId} ${e.change.value.request?.status}`;
    case "member":
      return `member ${e.change.value.member?.name} ${e.change.value.change} @${e.position}`;
    case "task":
      return `task ${e.change.value.task?.taskId} ${e.change.value.change} @${e.position}`;
    default:
      return `? @${e.position}`;
  }
}

/** The message cases that open a request (their envelope comes before the request's event). */
const REQUEST_CASES = new Set([
  "shutdownRequest",
  "planApprovalRequest",
  "taskClaimRequest",
  "taskAssign",
  "taskHandoffRequest",
  "resultSignoffRequest",
]);

/**
 * The feed's promises, checked on a list of events in delivery order: each inbox's seqs
 * strictly increasing (and, when `complete`, 1, 2, 3, ... with no gap); no position twice;
 * each request's created event before its final one, at most one of each (a task_assign has
 * only its approved one); the envelope that opened a request before its created event; and
 * each task's created event first (when `complete`), nothing after its completed or deleted.
 */
export function expectFeedOrder(events: TeamEvent[], complete = true): void {
  const lastSeq = new Map<string, bigint>();
  const positions = new Set<bigint>();
  const requestState = new Map<string, RequestStatus>();
  const asked = new Set<string>();
  const taskSeen = new Map<string, TaskChange>();
  for (const e of events) {
    expect(positions.has(e.position), `position ${e.position} delivered twice`).toBe(false);
    positions.add(e.position);
    if (e.change.case === "envelope") {
      const { recipient, envelope } = e.change.value;
      const seq = envelope?.seq ?? 0n;
      const before = lastSeq.get(recipient);
      if (complete || before !== undefined) {
        expect(seq, `${recipient}'s seq after ${before ?? 0n}`).toBe((before ?? 0n) + 1n);
      }
      lastSeq.set(recipient, seq);
      const kind = envelope?.message?.kind.case;
      if (kind !== undefined && REQUEST_CASES.has(kind)) asked.add(envelope?.requestId ?? "");
    } else if (e.change.case === "request") {
      const record = e.change.value.request;
      const id = record?.requestId ?? "";
      const before = requestState.get(id);
      // A task_assign is created decided: its one event is approved, after its envelope.
      if (record?.status === RequestStatus.PENDING || record?.kind === RequestKind.TASK_ASSIGN) {
        expect(before, `request ${id} created twice or after its end`).toBeUndefined();
        if (complete) expect(asked.has(id), `request ${id} created before its envelope`).toBe(true);
      } else {
        expect(before, `request ${id} ended before it was created, or twice`).toBe(
          complete ? RequestStatus.PENDING : (before ?? RequestStatus.PENDING),
        );
      }
      requestState.set(id, record?.status ?? RequestStatus.UNSPECIFIED);
    } else if (e.change.case === "task") {
      const id = e.change.value.task?.taskId ?? "";
      const change = e.change.value.change;
      const before = taskSeen.get(id);
      if (change === TaskChange.CREATED) {
        expect(before, `task ${id} created twice or after a change`).toBeUndefined();
      } else {
        if (complete) expect(before, `task ${id} changed before it was created`).toBeDefined();
        expect(
          before === TaskChange.COMPLETED || before === TaskChange.DELETED,
          `task ${id} ${TaskChange[change]} after it was ${TaskChange[before ?? 0]}`,
        ).toBe(false);
      }
      taskSeen.set(id, change);
    }
  }
}
