-- The permission protocol (a teammate's runtime asks the lead to allow a tool use) and the
-- approver role (a member who answers the lead's approvals on the lead's behalf).

ALTER TABLE requests DROP CONSTRAINT requests_kind_check,
  ADD CONSTRAINT requests_kind_check CHECK (kind IN ('shutdown', 'plan_approval', 'task_claim',
    'task_assign', 'task_handoff', 'result_signoff', 'permission'));

ALTER TABLE members DROP CONSTRAINT members_role_check,
  ADD CONSTRAINT members_role_check CHECK (role IN ('lead', 'teammate', 'observer', 'approver'));

-- Who answered a request: its addressee, or an approver answering for the lead. NULL while
-- pending, when it expired or was canceled, and for requests answered before this migration
-- (their addressee answered: no approver existed).
ALTER TABLE requests ADD COLUMN answered_by integer REFERENCES members (id);

-- The journal's line of an approver's answer names the lead it answered for ('' otherwise).
ALTER TABLE protocol_attempts
  ADD COLUMN on_behalf_of text NOT NULL DEFAULT '' CHECK (length(on_behalf_of) <= 128);
