import { RequestKind, TaskProgress, TaskState } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { TeamEvent } from "@team-protocols/contract/team/v1/feed_pb.js";
import type { Task } from "@team-protocols/contract/team/v1/records_pb.js";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { refusalText } from "./refusal.js";
import { mayWatch, type Session } from "./session-state.js";
import { throttle } from "./throttle.js";

/** The board's columns, left to right. */
export const COLUMNS = ["ready", "blocked", "in_progress", "in_review", "completed"] as const;
export type Column = (typeof COLUMNS)[number];

export const columnTitles: Record<Column, string> = {
  ready: "Ready",
  blocked: "Blocked",
  in_progress: "In progress",
  in_review: "In review",
  completed: "Completed",
};

/**
 * Where a task sits on the board; undefined for a deleted one (not shown). Completed and in
 * review go by status; an open task waiting on an open task is blocked (owned or not); an
 * unowned one waiting on nothing is ready; an owned one is in progress (begun or not).
 */
export function columnOf(t: Task): Column | undefined {
  switch (t.status) {
    case TaskProgress.DELETED:
      return undefined;
    case TaskProgress.COMPLETED:
      return "completed";
    case TaskProgress.IN_REVIEW:
      return "in_review";
  }
  if (t.openBlockers.length > 0) return "blocked";
  return t.state === TaskState.CLAIMED ? "in_progress" : "ready";
}

/** Request kinds whose changes move a task (a claim approved, a sign-off pending, ...). */
const TASK_KINDS = new Set([
  RequestKind.TASK_CLAIM,
  RequestKind.TASK_ASSIGN,
  RequestKind.TASK_HANDOFF,
  RequestKind.RESULT_SIGNOFF,
]);

const movesTasks = (e: TeamEvent) =>
  e.change.case === "task" ||
  (e.change.case === "request" && TASK_KINDS.has(e.change.value.request?.kind ?? 0));

export interface TaskBoard {
  /** The team's tasks but deleted ones, by column, each column by id. */
  columns: Record<Column, Task[]>;
  error: string | undefined;
  reload(): void;
}

/**
 * The team's task list, as the board shows it: ListTasks (every page), again whenever the feed
 * brings an event that moves a task (a task event, or a request event of a task protocol:
 * in_review begins and ends with a sign-off request). `events` are the feed's, newest first.
 */
export function useTaskBoard(
  session: Session,
  events: TeamEvent[],
  /** Grows with the member's inbox, for a member with no feed: a message may move a task. */
  inboxActivity = 0,
): TaskBoard {
  const { rpc } = session;
  const [tasks, setTasks] = useState<Task[]>([]);
  const [error, setError] = useState<string>();
  // Events already looked at (the feed's order is not its positions': track the events).
  const seen = useRef(new WeakSet<TeamEvent>());

  const reload = useMemo(
    () =>
      throttle(() => {
        void (async () => {
          const all: Task[] = [];
          let pageToken = "";
          do {
            const page = await rpc.listTasks({ pageSize: 500, pageToken });
            all.push(...page.tasks);
            pageToken = page.nextPageToken;
          } while (pageToken !== "" && all.length < 5_000);
          return all;
        })().then(
          (all) => {
            setTasks(all);
            setError(undefined);
          },
          (err) => setError(refusalText(err)),
        );
      }, 300),
    [rpc],
  );

  useEffect(() => {
    reload();
    return () => reload.cancel();
  }, [reload]);

  useEffect(() => {
    const fresh = events.filter((e) => !seen.current.has(e));
    for (const e of fresh) seen.current.add(e);
    if (fresh.some(movesTasks)) reload();
  }, [events, reload]);

  useEffect(() => {
    if (inboxActivity > 0) reload();
  }, [inboxActivity, reload]);

  // A member with no feed hears of few task changes (those addressed to it): the list is
  // read again every few seconds as well, as the approver's pending requests are.
  useEffect(() => {
    if (mayWatch(session)) return;
    const poll = setInterval(reload, 3_000);
    return () => clearInterval(poll);
  }, [session, reload]);

  const columns = useMemo(() => {
    const by = Object.fromEntries(COLUMNS.map((c) => [c, [] as Task[]])) as Record<Column, Task[]>;
    for (const t of tasks) {
      const c = columnOf(t);
      if (c) by[c].push(t);
    }
    for (const c of COLUMNS) by[c].sort(byId);
    return by;
  }, [tasks]);
  return { columns, error, reload };
}

/** Numbers in number order, then the rest in text order (Claude Code's lists go by id). */
function byId(x: Task, y: Task): number {
  const [a, b] = [Number(x.taskId), Number(y.taskId)];
  const na = Number.isInteger(a);
  const nb = Number.isInteger(b);
  if (na && nb) return a - b;
  if (na !== nb) return na ? -1 : 1;
  return x.taskId < y.taskId ? -1 : x.taskId > y.taskId ? 1 : 0;
}
