import {
  resultSignoffResponseMessage,
  taskAssignMessage,
} from "@team-protocols/client/messages.js";
import { taskProgressName } from "@team-protocols/client/names.js";
import {
  MemberRole,
  MemberStatus,
  RequestKind,
} from "@team-protocols/contract/team/v1/enums_pb.js";
import type { RequestRecord, Task } from "@team-protocols/contract/team/v1/records_pb.js";
import { useState } from "preact/hooks";
import { refusalText } from "../refusal.js";
import type { Session } from "../session-state.js";
import { COLUMNS, type Column, columnTitles, type TaskBoard, useTaskBoard } from "../task-board.js";
import type { TeamState } from "../team-state.js";

interface Props {
  session: Session;
  state: TeamState;
  /** The lead creates tasks, assigns ready ones and approves sign-offs; others look. */
  isLead: boolean;
}

/**
 * The team's task list as a board: ready, blocked, in progress, in review, completed. Each
 * card shows the task's owner and what it still waits on. The lead creates a task, assigns a
 * ready one to a teammate and approves a sign-off from here; the server checks every one.
 */
export function TasksBoard({ session, state, isLead }: Props) {
  const board = useTaskBoard(session, state.events, state.inboxActivity);
  const shown = COLUMNS.reduce((n, c) => n + board.columns[c].length, 0);
  return (
    <section id="tasks" class="panel">
      <h2>
        Tasks <span class="count">{shown}</span>
      </h2>
      {board.error && (
        <p class="refusal" role="alert">
          {board.error}
        </p>
      )}
      {isLead && <NewTask session={session} board={board} />}
      <div class="board">
        {COLUMNS.map((c) => (
          <div class="column-tasks" data-column={c} key={c}>
            <h3>
              {columnTitles[c]} <span class="count">{board.columns[c].length}</span>
            </h3>
            {board.columns[c].map((t) => (
              <TaskCard
                key={t.taskId}
                task={t}
                column={c}
                session={session}
                state={state}
                board={board}
                isLead={isLead}
              />
            ))}
          </div>
        ))}
      </div>
    </section>
  );
}

function NewTask({ session, board }: { session: Session; board: TaskBoard }) {
  const [subject, setSubject] = useState("");
  const [description, setDescription] = useState("");
  const [blockedBy, setBlockedBy] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const create = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await session.rpc.createTask({
        subject,
        description,
        blockedBy: blockedBy.split(/[,\s]+/).filter((id) => id !== ""),
      });
      setSubject("");
      setDescription("");
      setBlockedBy("");
      board.reload();
    } catch (err) {
      setError(refusalText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      id="new-task"
      class="filters"
      onSubmit={(e) => {
        e.preventDefault();
        void create();
      }}
    >
      <label>
        Subject
        <input
          name="subject"
          value={subject}
          onInput={(e) => setSubject((e.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        Description
        <input
          name="description"
          value={description}
          onInput={(e) => setDescription((e.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        Waits on (ids)
        <input
          name="blocked-by"
          value={blockedBy}
          onInput={(e) => setBlockedBy((e.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" class="create" disabled={busy}>
        Create task
      </button>
      {error && (
        <span class="refusal" role="alert">
          {error}
        </span>
      )}
    </form>
  );
}

/** The pending sign-off of a task, if one waits for the lead. */
const pendingSignoff = (pending: RequestRecord[], taskId: string) =>
  pending.find(
    (r) =>
      r.kind === RequestKind.RESULT_SIGNOFF &&
      r.request?.kind.case === "resultSignoffRequest" &&
      r.request.kind.value.taskId === taskId,
  );

function TaskCard({
  task,
  column,
  session,
  state,
  board,
  isLead,
}: Props & { task: Task; column: Column; board: TaskBoard }) {
  const teammates = state.members.filter(
    (m) => m.role === MemberRole.TEAMMATE && m.status === MemberStatus.ACTIVE,
  );
  const [assignee, setAssignee] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const signoff = column === "in_review" ? pendingSignoff(state.pending, task.taskId) : undefined;

  const act = async (call: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await call();
      board.reload();
      state.reloadPending();
    } catch (err) {
      setError(refusalText(err));
    } finally {
      setBusy(false);
    }
  };
  const to = assignee || teammates[0]?.name || "";

  return (
    <article class="task-card" data-task-id={task.taskId} data-column={column}>
      <header>
        <code class="id">#{task.taskId}</code> <b class="subject">{task.subject}</b>
      </header>
      <div class="meta">
        <span class="owner">{task.owner ? `owner ${task.owner}` : "no owner"}</span>
        {task.openBlockers.length > 0 && (
          <span class="blockers">
            waits on {task.openBlockers.map((id) => `#${id}`).join(", ")}
          </span>
        )}
        <span class="status">{taskProgressName(task.status)}</span>
      </div>
      {task.activeForm && column === "in_progress" && <div class="doing">{task.activeForm}</div>}
      {isLead && column === "ready" && teammates.length > 0 && (
        <div class="buttons">
          <select
            class="assignee"
            value={to}
            onChange={(e) => setAssignee((e.target as HTMLSelectElement).value)}
          >
            {teammates.map((m) => (
              <option key={m.name} value={m.name}>
                {m.name}
              </option>
            ))}
          </select>
          <button
            type="button"
            class="assign"
            disabled={busy || to === ""}
            onClick={() =>
              act(() => session.rpc.send({ to, message: taskAssignMessage(task.taskId) }))
            }
          >
            Assign
          </button>
        </div>
      )}
      {isLead && signoff && (
        <div class="buttons">
          <button
            type="button"
            class="approve approve-signoff"
            disabled={busy}
            onClick={() =>
              act(() =>
                session.rpc.send({
                  to: signoff.from,
                  message: resultSignoffResponseMessage(signoff.requestId, true),
                }),
              )
            }
          >
            Approve {signoff.from}'s result
          </button>
        </div>
      )}
      {error && (
        <p class="refusal" role="alert">
          {error}
        </p>
      )}
    </article>
  );
}
