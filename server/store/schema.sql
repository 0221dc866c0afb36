-- The schema the migrations in server/store/migrations/ make, as pg_dump --schema-only
-- prints it (no owners, no privileges). Generated: do not edit. After changing a migration,
-- run `npm run dump-schema` and commit this file; CI's `npm run check-schema` fails
-- when it and the migrations disagree.

--
-- PostgreSQL database dump
--

--
-- Name: drop_message_search(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.drop_message_search() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  DELETE FROM message_search s
  USING (SELECT DISTINCT team_id, envelope_id FROM deleted_messages) d
  WHERE s.team_id = d.team_id AND s.envelope_id = d.envelope_id
    AND NOT EXISTS (SELECT 1 FROM messages m
                    WHERE m.envelope_id = d.envelope_id AND m.team_id = d.team_id);
  DELETE FROM thread_activity a
  USING (SELECT DISTINCT team_id, thread_id FROM deleted_messages) d
  WHERE a.team_id = d.team_id AND a.thread_id = d.thread_id;
  -- GREATEST: an indexer may have added a newer message of the thread meanwhile.
  INSERT INTO thread_activity (team_id, reader_id, thread_id, last_position)
  SELECT m.team_id, r.reader_id, m.thread_id, max(m.feed_position)
  FROM (SELECT DISTINCT team_id, thread_id FROM deleted_messages) d
  JOIN messages m ON m.team_id = d.team_id AND m.thread_id = d.thread_id
       AND (m.envelope_id = d.thread_id OR m.thread_id <> m.envelope_id)
  CROSS JOIN LATERAL (VALUES (0), (m.recipient_id), (m.sender_id)) r (reader_id)
  WHERE r.reader_id IS NOT NULL
  GROUP BY 1, 2, 3
  ORDER BY 1, 2, 3
  ON CONFLICT (team_id, reader_id, thread_id) DO UPDATE
    SET last_position = GREATEST(thread_activity.last_position, EXCLUDED.last_position);
  RETURN NULL;
END $$;

--
-- Name: protocol_attempts_append_only(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.protocol_attempts_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('team_protocols.retention', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'protocol_attempts is append-only: % is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$$;

--
-- Name: queue_message_search(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.queue_message_search() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO search_pending (envelope_id, team_id)
  SELECT DISTINCT envelope_id, team_id FROM stored_messages;
  RETURN NULL;
END $$;

--
-- Name: inboxes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.inboxes (
    member_id integer NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    appended_bytes bigint DEFAULT 0 NOT NULL
);

--
-- Name: leases; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.leases (
    id bigint NOT NULL,
    lease_id text NOT NULL,
    team_id integer NOT NULL,
    holder_id integer NOT NULL,
    resource text NOT NULL,
    mode text NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    acquired_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT leases_mode_check CHECK ((mode = ANY (ARRAY['exclusive'::text, 'shared'::text]))),
    CONSTRAINT leases_reason_check CHECK ((length(reason) <= 500)),
    CONSTRAINT leases_resource_check CHECK (((length(resource) >= 1) AND (length(resource) <= 1024)))
);

--
-- Name: leases_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.leases ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.leases_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: team_feed_position; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.team_feed_position
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: member_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.member_events (
    feed_position bigint DEFAULT nextval('public.team_feed_position'::regclass) NOT NULL,
    feed_xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    team_id integer NOT NULL,
    member_id integer NOT NULL,
    change text NOT NULL,
    role text NOT NULL,
    status text NOT NULL,
    permission_mode text NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    presence text,
    last_seen_at timestamp with time zone,
    last_seen_via text,
    CONSTRAINT member_events_change_check CHECK ((change = ANY (ARRAY['added'::text, 'stopped'::text, 'removed'::text, 'permission_mode'::text, 'presence'::text]))),
    CONSTRAINT member_events_last_seen_via_check CHECK ((last_seen_via = ANY (ARRAY['stream'::text, 'mcp'::text, 'hook'::text, 'rpc'::text]))),
    CONSTRAINT member_events_presence_check CHECK ((presence = ANY (ARRAY['online'::text, 'idle'::text, 'offline'::text])))
);

--
-- Name: members; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.members (
    id integer NOT NULL,
    team_id integer NOT NULL,
    name text NOT NULL,
    role text NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    permission_mode text DEFAULT 'default'::text NOT NULL,
    token_hash bytea NOT NULL,
    acked_seq bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone,
    stopped_at timestamp with time zone,
    acked_bytes bigint DEFAULT 0 NOT NULL,
    last_seen_via text,
    presence text DEFAULT 'offline'::text NOT NULL,
    CONSTRAINT members_last_seen_via_check CHECK ((last_seen_via = ANY (ARRAY['stream'::text, 'mcp'::text, 'hook'::text, 'rpc'::text]))),
    CONSTRAINT members_permission_mode_check CHECK ((permission_mode = ANY (ARRAY['default'::text, 'accept_edits'::text, 'bypass_permissions'::text, 'plan'::text]))),
    CONSTRAINT members_presence_check CHECK ((presence = ANY (ARRAY['online'::text, 'idle'::text, 'offline'::text]))),
    CONSTRAINT members_role_check CHECK ((role = ANY (ARRAY['lead'::text, 'teammate'::text, 'observer'::text, 'approver'::text]))),
    CONSTRAINT members_status_check CHECK ((status = ANY (ARRAY['active'::text, 'stopped'::text])))
);

--
-- Name: members_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.members ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.members_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: message_search; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.message_search (
    envelope_id text NOT NULL COLLATE pg_catalog."C",
    team_id integer NOT NULL,
    search_text text NOT NULL,
    search tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, search_text)) STORED,
    "position" bigint NOT NULL
);

--
-- Name: messages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.messages (
    recipient_id integer NOT NULL,
    seq bigint NOT NULL,
    team_id integer NOT NULL,
    sender_id integer,
    from_name text NOT NULL,
    to_name text NOT NULL,
    request_id text,
    message_id text,
    kind text NOT NULL,
    body bytea NOT NULL,
    sent_at timestamp with time zone DEFAULT now() NOT NULL,
    feed_position bigint DEFAULT nextval('public.team_feed_position'::regclass) NOT NULL,
    feed_xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    envelope_id text NOT NULL COLLATE pg_catalog."C",
    thread_id text NOT NULL COLLATE pg_catalog."C",
    reply_to text COLLATE pg_catalog."C"
);

--
-- Name: protocol_attempts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.protocol_attempts (
    id bigint NOT NULL,
    team_id integer NOT NULL,
    member_id integer NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    action text NOT NULL,
    to_name text DEFAULT ''::text NOT NULL,
    request_id text DEFAULT ''::text NOT NULL,
    outcome text NOT NULL,
    rule text DEFAULT ''::text NOT NULL,
    code text DEFAULT ''::text NOT NULL,
    message text DEFAULT ''::text NOT NULL,
    on_behalf_of text DEFAULT ''::text NOT NULL,
    CONSTRAINT protocol_attempts_action_check CHECK (((length(action) >= 1) AND (length(action) <= 64))),
    CONSTRAINT protocol_attempts_check CHECK (((outcome = 'refused'::text) = (code <> ''::text))),
    CONSTRAINT protocol_attempts_code_check CHECK ((length(code) <= 64)),
    CONSTRAINT protocol_attempts_message_check CHECK ((length(message) <= 1024)),
    CONSTRAINT protocol_attempts_on_behalf_of_check CHECK ((length(on_behalf_of) <= 128)),
    CONSTRAINT protocol_attempts_outcome_check CHECK ((outcome = ANY (ARRAY['accepted'::text, 'refused'::text]))),
    CONSTRAINT protocol_attempts_request_id_check CHECK ((length(request_id) <= 128)),
    CONSTRAINT protocol_attempts_rule_check CHECK ((length(rule) <= 64)),
    CONSTRAINT protocol_attempts_to_name_check CHECK ((length(to_name) <= 128))
);

--
-- Name: protocol_attempts_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.protocol_attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.protocol_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: request_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.request_events (
    feed_position bigint DEFAULT nextval('public.team_feed_position'::regclass) NOT NULL,
    feed_xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    team_id integer NOT NULL,
    request_id text NOT NULL,
    status text NOT NULL,
    at timestamp with time zone NOT NULL,
    CONSTRAINT request_events_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'approved'::text, 'rejected'::text, 'expired'::text, 'canceled'::text])))
);

--
-- Name: requests; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.requests (
    id text NOT NULL,
    "position" bigint NOT NULL,
    team_id integer NOT NULL,
    kind text NOT NULL,
    from_id integer NOT NULL,
    to_id integer NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    request_body bytea NOT NULL,
    response_body bytea,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    resolved_at timestamp with time zone,
    expires_at timestamp with time zone NOT NULL,
    task_id text,
    answered_by integer,
    CONSTRAINT requests_check CHECK (((status = 'pending'::text) = (resolved_at IS NULL))),
    CONSTRAINT requests_kind_check CHECK ((kind = ANY (ARRAY['shutdown'::text, 'plan_approval'::text, 'task_claim'::text, 'task_assign'::text, 'task_handoff'::text, 'result_signoff'::text, 'permission'::text]))),
    CONSTRAINT requests_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'approved'::text, 'rejected'::text, 'expired'::text, 'canceled'::text]))),
    CONSTRAINT requests_task_check CHECK (((task_id IS NOT NULL) = (kind = ANY (ARRAY['task_claim'::text, 'task_assign'::text, 'task_handoff'::text, 'result_signoff'::text]))))
);

--
-- Name: requests_position_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.requests ALTER COLUMN "position" ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.requests_position_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: search_pending; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.search_pending (
    id bigint NOT NULL,
    envelope_id text NOT NULL COLLATE pg_catalog."C",
    team_id integer NOT NULL
);

--
-- Name: search_pending_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.search_pending_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: search_pending_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.search_pending_id_seq OWNED BY public.search_pending.id;

--
-- Name: sends; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.sends (
    sender_id integer NOT NULL,
    message_id text NOT NULL,
    fingerprint bytea NOT NULL,
    deliveries jsonb,
    request_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: tasks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tasks (
    team_id integer NOT NULL,
    task_id text NOT NULL,
    state text DEFAULT 'unowned'::text NOT NULL,
    owner_id integer,
    created_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    updated_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    change bigint NOT NULL,
    subject text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    active_form text DEFAULT ''::text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    created_by integer,
    CONSTRAINT tasks_check CHECK (((state = 'unowned'::text) = (owner_id IS NULL))),
    CONSTRAINT tasks_state_check CHECK ((state = ANY (ARRAY['unowned'::text, 'claimed'::text, 'done'::text]))),
    CONSTRAINT tasks_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'in_progress'::text, 'completed'::text, 'deleted'::text]))),
    CONSTRAINT tasks_status_state_check CHECK ((((state = 'done'::text) = (status = 'completed'::text)) AND ((state <> 'unowned'::text) OR (status = ANY (ARRAY['pending'::text, 'deleted'::text]))) AND ((status <> 'deleted'::text) OR (state = 'unowned'::text)))),
    CONSTRAINT tasks_subject_check CHECK (((length(subject) >= 1) AND (length(subject) <= 200)))
);

--
-- Name: task_changes; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.task_changes
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: task_changes; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.task_changes OWNED BY public.tasks.change;

--
-- Name: task_dependencies; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.task_dependencies (
    team_id integer NOT NULL,
    task_id text NOT NULL,
    blocked_by text NOT NULL,
    CONSTRAINT task_dependencies_check CHECK ((task_id <> blocked_by))
);

--
-- Name: task_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.task_events (
    feed_position bigint DEFAULT nextval('public.team_feed_position'::regclass) NOT NULL,
    feed_xid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    team_id integer NOT NULL,
    task_id text NOT NULL,
    change text NOT NULL,
    actor_id integer NOT NULL,
    state text NOT NULL,
    status text NOT NULL,
    owner_id integer,
    created_by integer,
    subject text NOT NULL,
    description text NOT NULL,
    active_form text NOT NULL,
    blocked_by text[] NOT NULL,
    open_blockers text[] NOT NULL,
    created_at timestamp with time zone NOT NULL,
    at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT task_events_change_check CHECK ((change = ANY (ARRAY['created'::text, 'updated'::text, 'owner'::text, 'completed'::text, 'deleted'::text, 'unblocked'::text])))
);

--
-- Name: teams; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.teams (
    id integer NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: teams_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.teams ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.teams_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: thread_activity; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.thread_activity (
    team_id integer NOT NULL,
    reader_id integer NOT NULL,
    thread_id text NOT NULL COLLATE pg_catalog."C",
    last_position bigint NOT NULL
);

--
-- Name: search_pending id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.search_pending ALTER COLUMN id SET DEFAULT nextval('public.search_pending_id_seq'::regclass);

--
-- Name: tasks change; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tasks ALTER COLUMN change SET DEFAULT nextval('public.task_changes'::regclass);

--
-- Name: inboxes inboxes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inboxes
    ADD CONSTRAINT inboxes_pkey PRIMARY KEY (member_id);

--
-- Name: leases leases_lease_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.leases
    ADD CONSTRAINT leases_lease_id_key UNIQUE (lease_id);

--
-- Name: leases leases_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.leases
    ADD CONSTRAINT leases_pkey PRIMARY KEY (id);

--
-- Name: member_events member_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.member_events
    ADD CONSTRAINT member_events_pkey PRIMARY KEY (feed_position);

--
-- Name: members members_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.members
    ADD CONSTRAINT members_pkey PRIMARY KEY (id);

--
-- Name: members members_team_id_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.members
    ADD CONSTRAINT members_team_id_name_key UNIQUE (team_id, name);

--
-- Name: members members_token_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.members
    ADD CONSTRAINT members_token_hash_key UNIQUE (token_hash);

--
-- Name: message_search message_search_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.message_search
    ADD CONSTRAINT message_search_pkey PRIMARY KEY (team_id, envelope_id);

--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (recipient_id, seq);

--
-- Name: protocol_attempts protocol_attempts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.protocol_attempts
    ADD CONSTRAINT protocol_attempts_pkey PRIMARY KEY (id);

--
-- Name: request_events request_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.request_events
    ADD CONSTRAINT request_events_pkey PRIMARY KEY (feed_position);

--
-- Name: requests requests_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.requests
    ADD CONSTRAINT requests_pkey PRIMARY KEY (id);

--
-- Name: requests requests_position_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.requests
    ADD CONSTRAINT requests_position_key UNIQUE ("position");

--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

--
-- Name: search_pending search_pending_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.search_pending
    ADD CONSTRAINT search_pending_pkey PRIMARY KEY (id);

--
-- Name: sends sends_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sends
    ADD CONSTRAINT sends_pkey PRIMARY KEY (sender_id, message_id);

--
-- Name: task_dependencies task_dependencies_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.task_dependencies
    ADD CONSTRAINT task_dependencies_pkey PRIMARY KEY (team_id, task_id, blocked_by);

--
-- Name: task_events task_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.task_events
    ADD CONSTRAINT task_events_pkey PRIMARY KEY (feed_position);

--
-- Name: tasks tasks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tasks
    ADD CONSTRAINT tasks_pkey PRIMARY KEY (team_id, task_id);

--
-- Name: teams teams_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.teams
    ADD CONSTRAINT teams_name_key UNIQUE (name);

--
-- Name: teams teams_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.teams
    ADD CONSTRAINT teams_pkey PRIMARY KEY (id);

--
-- Name: thread_activity thread_activity_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.thread_activity
    ADD CONSTRAINT thread_activity_pkey PRIMARY KEY (team_id, reader_id, thread_id);

--
-- Name: leases_by_holder; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX leases_by_holder ON public.leases USING btree (holder_id);

--
-- Name: leases_by_team; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX leases_by_team ON public.leases USING btree (team_id, expires_at);

--
-- Name: member_events_by_age; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX member_events_by_age ON public.member_events USING btree (at);

--
-- Name: member_events_feed; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX member_events_feed ON public.member_events USING btree (team_id, feed_xid);

--
-- Name: members_one_lead; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX members_one_lead ON public.members USING btree (team_id) WHERE (role = 'lead'::text);

--
-- Name: message_search_words; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX message_search_words ON public.message_search USING gin (search);

--
-- Name: messages_envelope; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_envelope ON public.messages USING btree (envelope_id);

--
-- Name: messages_feed; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_feed ON public.messages USING btree (team_id, feed_xid);

--
-- Name: messages_request; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_request ON public.messages USING btree (team_id, request_id) WHERE (request_id IS NOT NULL);

--
-- Name: messages_sender; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_sender ON public.messages USING btree (sender_id, feed_position);

--
-- Name: messages_thread; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX messages_thread ON public.messages USING btree (thread_id) WHERE (thread_id <> envelope_id);

--
-- Name: protocol_attempts_by_age; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX protocol_attempts_by_age ON public.protocol_attempts USING btree (at);

--
-- Name: protocol_attempts_by_member; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX protocol_attempts_by_member ON public.protocol_attempts USING btree (member_id, id DESC);

--
-- Name: protocol_attempts_by_request; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX protocol_attempts_by_request ON public.protocol_attempts USING btree (team_id, request_id, id DESC) WHERE (request_id <> ''::text);

--
-- Name: protocol_attempts_by_team; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX protocol_attempts_by_team ON public.protocol_attempts USING btree (team_id, id DESC);

--
-- Name: request_events_by_request; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX request_events_by_request ON public.request_events USING btree (request_id);

--
-- Name: request_events_feed; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX request_events_feed ON public.request_events USING btree (team_id, feed_xid);

--
-- Name: requests_by_from; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX requests_by_from ON public.requests USING btree (from_id, "position" DESC);

--
-- Name: requests_by_task; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX requests_by_task ON public.requests USING btree (team_id, task_id, "position") WHERE (task_id IS NOT NULL);

--
-- Name: requests_by_team; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX requests_by_team ON public.requests USING btree (team_id, "position" DESC);

--
-- Name: requests_by_to; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX requests_by_to ON public.requests USING btree (to_id, "position" DESC);

--
-- Name: requests_finished_by_age; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX requests_finished_by_age ON public.requests USING btree (resolved_at) WHERE (status <> 'pending'::text);

--
-- Name: requests_pending_by_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX requests_pending_by_expiry ON public.requests USING btree (expires_at) WHERE (status = 'pending'::text);

--
-- Name: sends_by_age; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX sends_by_age ON public.sends USING btree (created_at);

--
-- Name: task_dependencies_by_blocker; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX task_dependencies_by_blocker ON public.task_dependencies USING btree (team_id, blocked_by);

--
-- Name: task_events_by_age; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX task_events_by_age ON public.task_events USING btree (at);

--
-- Name: task_events_feed; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX task_events_feed ON public.task_events USING btree (team_id, feed_xid);

--
-- Name: tasks_by_change; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tasks_by_change ON public.tasks USING btree (team_id, change DESC);

--
-- Name: tasks_by_owner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tasks_by_owner ON public.tasks USING btree (owner_id) WHERE (owner_id IS NOT NULL);

--
-- Name: thread_activity_recent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX thread_activity_recent ON public.thread_activity USING btree (team_id, reader_id, last_position);

--
-- Name: messages messages_drop_search; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER messages_drop_search AFTER DELETE ON public.messages REFERENCING OLD TABLE AS deleted_messages FOR EACH STATEMENT EXECUTE FUNCTION public.drop_message_search();

--
-- Name: messages messages_queue_search; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER messages_queue_search AFTER INSERT ON public.messages REFERENCING NEW TABLE AS stored_messages FOR EACH STATEMENT EXECUTE FUNCTION public.queue_message_search();

--
-- Name: protocol_attempts protocol_attempts_no_change; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER protocol_attempts_no_change BEFORE DELETE OR UPDATE ON public.protocol_attempts FOR EACH ROW EXECUTE FUNCTION public.protocol_attempts_append_only();

--
-- Name: protocol_attempts protocol_attempts_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER protocol_attempts_no_truncate BEFORE TRUNCATE ON public.protocol_attempts FOR EACH STATEMENT EXECUTE FUNCTION public.protocol_attempts_append_only();

--
-- Name: inboxes inboxes_member_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.inboxes
    ADD CONSTRAINT inboxes_member_id_fkey FOREIGN KEY (member_id) REFERENCES public.members(id);

--
-- Name: leases leases_holder_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.leases
    ADD CONSTRAINT leases_holder_id_fkey FOREIGN KEY (holder_id) REFERENCES public.members(id) ON DELETE CASCADE;

--
-- Name: leases leases_team_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.leases
    ADD CONSTRAINT leases_team_id_fkey FOREIGN KEY (team_id) REFERENCES public.teams(id) ON DELETE CASCADE;

--
-- Name: member_events member_events_member_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.member_events
    ADD CONSTRAINT member_events_member_id_fkey FOREIGN KEY (member_id) REFERENCES public.members(id);

--
-- Name: member_events member_events_team_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.member_events
    ADD CONSTRAINT member_events_team_id_fkey FOREIGN KEY (team_id) REFERENCES public.teams(id);

--
-- Name: members members_team_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.members
    ADD CONSTRAINT members_team_id_fkey FOREIGN KEY (team_id) REFERENCES public.teams(id);

--
-- Name: messages messages_recipient_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_recipient_id_fkey FOREIGN KEY (recipient_id) REFERENCES public.members(id);

--
-- Name: messages messages_sender_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_sender_id_fkey FOREIGN KEY (sender_id) REFERENCES public.members(id);

--
-- Name: messages messages_team_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_team_id_fkey FOREIGN KEY (team_id) REFERENCES public.teams(id);

--
-- Name: protocol_attempts protocol_attempts_member_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.protocol_attempts
    ADD CONSTRAINT protocol_attempts_member_id_fkey FOREIGN KEY (member_id) REFERENCES public.members(id);

--
-- Name: protocol_attempts protocol_attempts_team_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.protocol_attempts
    ADD CONSTRAINT protocol_attempts_team_id_fkey FOREIGN KEY (team_id) REFERENCES public.teams(id);

--
-- Name: request_events request_events_request_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.request_events
    ADD CONSTRAINT request_events_request_id_fkey FOREIGN KEY (request_id) REFERENCES public.requests(id) ON DELETE CASCADE;

--
-- Name: request_events request_events_team_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.request_events
    ADD CONSTRAINT request_events_team_id_fkey FOREIGN KEY (team_id) REFERENCES public.teams(id);

--
-- Name: requests requests_answered_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.requests
    ADD CONSTRAINT requests_answered_by_fkey FOREIGN KEY (answered_by) REFERENCES public.members(id);

--
-- Name: requests requests_from_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.requests
    ADD CONSTRAINT requests_from_id_fkey FOREIGN KEY (from_id) REFERENCES public.members(id);

--
-- Name: requests requests_team_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.requests
    ADD CONSTRAINT requests_team_id_fkey FOREIGN KEY (team_id) REFERENCES public.teams(id);

--
-- Name: requests requests_to_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.requests
    ADD CONSTRAINT requests_to_id_fkey FOREIGN KEY (to_id) REFERENCES public.members(id);

--
-- Name: sends sends_sender_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sends
    ADD CONSTRAINT sends_sender_id_fkey FOREIGN KEY (sender_id) REFERENCES public.members(id);

--
-- Name: task_dependencies task_dependencies_team_id_blocked_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.task_dependencies
    ADD CONSTRAINT task_dependencies_team_id_blocked_by_fkey FOREIGN KEY (team_id, blocked_by) REFERENCES public.tasks(team_id, task_id);

--
-- Name: task_dependencies task_dependencies_team_id_task_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.task_dependencies
    ADD CONSTRAINT task_dependencies_team_id_task_id_fkey FOREIGN KEY (team_id, task_id) REFERENCES public.tasks(team_id, task_id);

--
-- Name: task_events task_events_actor_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.task_events
    ADD CONSTRAINT task_events_actor_id_fkey FOREIGN KEY (actor_id) REFERENCES public.members(id);

--
-- Name: task_events task_events_created_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.task_events
    ADD CONSTRAINT task_events_created_by_fkey FOREIGN KEY (created_by) REFERENCES public.members(id);

--
-- Name: task_events task_events_owner_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.task_events
    ADD CONSTRAINT task_events_owner_id_fkey FOREIGN KEY (owner_id) REFERENCES public.members(id);

--
-- Name: task_events task_events_team_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.task_events
    ADD CONSTRAINT task_events_team_id_fkey FOREIGN KEY (team_id) REFERENCES public.teams(id);

--
-- Name: tasks tasks_created_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tasks
    ADD CONSTRAINT tasks_created_by_fkey FOREIGN KEY (created_by) REFERENCES public.members(id);

--
-- Name: tasks tasks_owner_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tasks
    ADD CONSTRAINT tasks_owner_id_fkey FOREIGN KEY (owner_id) REFERENCES public.members(id);

--
-- Name: tasks tasks_team_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tasks
    ADD CONSTRAINT tasks_team_id_fkey FOREIGN KEY (team_id) REFERENCES public.teams(id);

--
-- PostgreSQL database dump complete
--
