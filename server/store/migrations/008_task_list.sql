-- The task list (docs/architecture.md, "The task list"): each task gets a subject, a
-- description, an active form, a status and the tasks it waits on; the feed gets task events.
-- Tasks recorded by a claim or an assignment before this migration keep working: their id
-- becomes their subject, their status follows their state.

ALTER TABLE tasks
  ADD COLUMN subject     text,
  ADD COLUMN description text NOT NULL DEFAULT '',
  ADD COLUMN active_form text NOT NULL DEFAULT '',
  -- The list's word. in_review and "ready" are not stored: they are derived when read (a
  -- pending result_signoff request; unowned, pending and nothing open blocking it).
  ADD COLUMN status      text NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'in_progress', 'completed', 'deleted')),
  -- Who created it (CreateTask, or the first claim or assignment naming it).
  ADD COLUMN created_by  integer REFERENCES members (id);

UPDATE tasks k SET
  subject = left(k.task_id, 200),
  status = CASE k.state WHEN 'done' THEN 'completed' WHEN 'claimed' THEN 'in_progress'
                        ELSE 'pending' END,
  created_by = (SELECT r.from_id FROM requests r
                WHERE r.team_id = k.team_id AND r.task_id = k.task_id
                ORDER BY r.position LIMIT 1);

ALTER TABLE tasks
  ALTER COLUMN subject SET NOT NULL,
  ADD CONSTRAINT tasks_subject_check CHECK (length(subject) BETWEEN 1 AND 200),
  -- state is what the task protocols (and clients older than status) read: the two agree.
  ADD CONSTRAINT tasks_status_state_check CHECK (
    (state = 'done') = (status = 'completed')
    AND (state <> 'unowned' OR status IN ('pending', 'deleted'))
    AND (status <> 'deleted' OR state = 'unowned'));

-- A task waits on another of its team until that one is completed or deleted. Edges change
-- only under the team's task-graph lock (store/task-dependencies.ts), which keeps the graph
-- acyclic: the check and the insert see every edge.
CREATE TABLE task_dependencies (
  team_id    integer NOT NULL,
  task_id    text NOT NULL,
  blocked_by text NOT NULL,
  PRIMARY KEY (team_id, task_id, blocked_by),
  FOREIGN KEY (team_id, task_id) REFERENCES tasks (team_id, task_id),
  FOREIGN KEY (team_id, blocked_by) REFERENCES tasks (team_id, task_id),
  CHECK (task_id <> blocked_by)
);

-- The tasks waiting on one (its dependents: `blocks`, and what its completion unblocks).
CREATE INDEX task_dependencies_by_blocker ON task_dependencies (team_id, blocked_by);

-- A task's changes for the feed (docs/watch.md), each with the task as the change left it.
-- Inserted after the task's row lock, like the other event tables, so a task's events keep
-- their order. blocks is not kept (another task's change alters it).
CREATE TABLE task_events (
  feed_position bigint PRIMARY KEY DEFAULT nextval('team_feed_position'),
  feed_xid      xid8 NOT NULL DEFAULT pg_current_xact_id(),
  team_id       integer NOT NULL REFERENCES teams (id),
  task_id       text NOT NULL,
  change        text NOT NULL
                CHECK (change IN ('created', 'updated', 'owner', 'completed', 'deleted', 'unblocked')),
  -- The member whose call made the change.
  actor_id      integer NOT NULL REFERENCES members (id),
  state         text NOT NULL,
  -- As read then: in_review when a sign-off was pending.
  status        text NOT NULL,
  owner_id      integer REFERENCES members (id),
  created_by    integer REFERENCES members (id),
  subject       text NOT NULL,
  description   text NOT NULL,
  active_form   text NOT NULL,
  blocked_by    text[] NOT NULL,
  open_blockers text[] NOT NULL,
  created_at    timestamptz NOT NULL,
  at            timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX task_events_feed ON task_events (team_id, feed_xid);
CREATE INDEX task_events_by_age ON task_events (at);
