-- Task protocols (claim, assign, handoff, result sign-off): the server records who holds
-- which task id. The tasks themselves live in the agents' own task lists; a row here is made
-- by the first claim or assignment that names its id, and only the protocols move it.

CREATE TABLE tasks (
  team_id    integer NOT NULL REFERENCES teams (id),
  -- As the team names it (1 to 128 characters, no control characters).
  task_id    text NOT NULL,
  state      text NOT NULL DEFAULT 'unowned' CHECK (state IN ('unowned', 'claimed', 'done')),
  -- The holder while claimed; the member whose result was signed off once done.
  owner_id   integer REFERENCES members (id),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- Drawn anew at every change: ListTasks lists most recently changed first, paged by it.
  change     bigint NOT NULL,
  PRIMARY KEY (team_id, task_id),
  CHECK ((state = 'unowned') = (owner_id IS NULL))
);

CREATE SEQUENCE task_changes AS bigint OWNED BY tasks.change;
ALTER TABLE tasks ALTER COLUMN change SET DEFAULT nextval('task_changes');

-- ListTasks: a team's tasks, most recently changed first; a stopping member's tasks by owner.
CREATE INDEX tasks_by_change ON tasks (team_id, change DESC);
CREATE INDEX tasks_by_owner ON tasks (owner_id) WHERE owner_id IS NOT NULL;

-- Every request of a task protocol names its task: the task's history, and its pending
-- requests (one-owner looks for a pending claim; a change of owner cancels the others).
ALTER TABLE requests ADD COLUMN task_id text;
CREATE INDEX requests_by_task ON requests (team_id, task_id, position) WHERE task_id IS NOT NULL;

ALTER TABLE requests DROP CONSTRAINT requests_kind_check,
  ADD CONSTRAINT requests_kind_check CHECK (kind IN ('shutdown', 'plan_approval', 'task_claim',
    'task_assign', 'task_handoff', 'result_signoff'));
ALTER TABLE requests ADD CONSTRAINT requests_task_check
  CHECK ((task_id IS NOT NULL) = (kind IN ('task_claim', 'task_assign', 'task_handoff', 'result_signoff')));
