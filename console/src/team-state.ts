import { RequestStatus } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { TeamEvent } from "@team-protocols/contract/team/v1/feed_pb.js";
import type {
  Envelope,
  Lease,
  Member,
  RequestRecord,
} from "@team-protocols/contract/team/v1/records_pb.js";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { type FeedStatus, runFeed } from "./feed.js";
import { runInbox } from "./inbox.js";
import { refusalText } from "./refusal.js";
import { isApprover, mayWatch, type Session } from "./session-state.js";
import { throttle } from "./throttle.js";

/** The feed keeps this many events on the page (the newest); the server keeps them all. */
export const FEED_LINES = 500;

export interface TeamState {
  /** The team's name, once a record or an event has named it. */
  team: string;
  members: Member[];
  membersError: string | undefined;
  /** The team's live leases (ListLeases), read again with the members. */
  leases: Lease[];
  leasesError: string | undefined;
  /** Pending requests, newest first. */
  pending: RequestRecord[];
  pendingError: string | undefined;
  /** The feed's events, newest first (at most FEED_LINES); none for a teammate or approver. */
  events: TeamEvent[];
  /** The feed's stream for the lead and observers; the inbox's for the others. */
  status: FeedStatus;
  /** Grows with every event: panels that list what events do not carry refresh on it. */
  activity: number;
  /** The signed-in member's own inbox, newest first (a teammate or approver; WatchTeam refuses them). */
  inbox: Envelope[];
  /** Grows with every message of that inbox (the task board refreshes on it). */
  inboxActivity: number;
  reloadMembers(): void;
  reloadPending(): void;
}

/**
 * What the console shows of the team, kept current: the member list (ListMembers, again after
 * member events, presence changes among them, and heartbeats, which is when last-seen times
 * move) and the leases with it (ListLeases), pending requests
 * (ListRequests, then kept by the feed's request events), and the feed itself.
 */
export function useTeamState(session: Session): TeamState {
  const { rpc } = session;
  const [team, setTeam] = useState("");
  const [members, setMembers] = useState<Member[]>([]);
  const [membersError, setMembersError] = useState<string>();
  const [leases, setLeases] = useState<Lease[]>([]);
  const [leasesError, setLeasesError] = useState<string>();
  const [pending, setPending] = useState<Map<string, RequestRecord>>(new Map());
  const [pendingError, setPendingError] = useState<string>();
  const [events, setEvents] = useState<TeamEvent[]>([]);
  const [status, setStatus] = useState<FeedStatus>({ state: "connecting", connects: 0 });
  const [activity, setActivity] = useState(0);
  const [inbox, setInbox] = useState<Envelope[]>([]);
  const [inboxActivity, setInboxActivity] = useState(0);
  const batch = useRef<TeamEvent[]>([]);

  const actions = useMemo(() => {
    const reloadMembers = throttle(() => {
      rpc.listMembers({}).then(
        (r) => {
          setMembers(r.members);
          setMembersError(undefined);
        },
        (err) => setMembersError(refusalText(err)),
      );
      // Lease changes have no feed events: read with the members, at least every heartbeat.
      rpc.listLeases({}).then(
        (r) => {
          setLeases(r.leases);
          setLeasesError(undefined);
        },
        (err) => setLeasesError(refusalText(err)),
      );
    }, 2_000);
    const reloadPending = () => {
      rpc.listRequests({ status: RequestStatus.PENDING, pageSize: 500 }).then(
        (r) => {
          setPending(new Map(r.requests.map((q) => [q.requestId, q])));
          setPendingError(undefined);
          const named = r.requests[0]?.team;
          if (named) setTeam(named);
        },
        (err) => setPendingError(refusalText(err)),
      );
    };
    // Events come one by one, hundreds at once when the feed replays: they are applied in
    // one render, after the burst.
    const flush = () => {
      const arrived = batch.current;
      batch.current = [];
      if (arrived.length === 0) return;
      const newestFirst = [...arrived].reverse();
      setEvents((shown) => [...newestFirst, ...shown].slice(0, FEED_LINES));
      setActivity((n) => n + arrived.length);
      setPending((before) => {
        let after = before;
        for (const event of arrived) {
          if (event.change.case !== "request") continue;
          const record = event.change.value.request;
          if (!record) continue;
          if (after === before) after = new Map(before);
          if (record.status === RequestStatus.PENDING) after.set(record.requestId, record);
          else after.delete(record.requestId);
        }
        return after;
      });
      const named = arrived.find((e) => teamOf(e));
      if (named) setTeam(teamOf(named) ?? "");
      if (arrived.some((e) => e.change.case === "member")) reloadMembers();
    };
    // A teammate's inbox: messages arrive one by one too (the whole inbox when it opens).
    const inboxBatch: Envelope[] = [];
    const flushInbox = () => {
      const arrived = inboxBatch.splice(0);
      if (arrived.length === 0) return;
      setInbox((shown) => [...arrived.reverse(), ...shown].slice(0, FEED_LINES));
      setInboxActivity((n) => n + arrived.length);
      const named = arrived.find((e) => e.team)?.team;
      if (named) setTeam(named);
      // Requests to answer and answers to own requests come as messages: the list follows.
      if (arrived.some((e) => e.requestId !== "")) reloadPending();
    };
    return {
      reloadMembers,
      reloadPending,
      flush: throttle(flush, 100),
      inboxBatch,
      flushInbox: throttle(flushInbox, 100),
    };
  }, [rpc]);

  useEffect(() => {
    const stop = new AbortController();
    actions.reloadMembers();
    actions.reloadPending();
    if (mayWatch(session))
      void runFeed(
        rpc,
        {
          onEvents(arrived) {
            batch.current.push(...arrived);
            actions.flush();
          },
          onHeartbeat: () => actions.reloadMembers(),
          onStatus: setStatus,
        },
        stop.signal,
      );
    else
      void runInbox(
        rpc,
        {
          onEnvelope(envelope) {
            actions.inboxBatch.push(envelope);
            actions.flushInbox();
          },
          onHeartbeat: () => actions.reloadMembers(),
          onStatus: setStatus,
        },
        stop.signal,
      );
    // An approver has no team feed (it answers, it does not watch): what waits for an answer
    // is listed again every few seconds instead.
    const poll = isApprover(session) ? setInterval(actions.reloadPending, 3_000) : undefined;
    return () => {
      clearInterval(poll);
      stop.abort();
      actions.reloadMembers.cancel();
      actions.flush.cancel();
      actions.flushInbox.cancel();
    };
  }, [rpc, actions, session]);

  const pendingList = useMemo(
    () =>
      [...pending.values()].sort((a, b) =>
        Number((b.createdAt?.seconds ?? 0n) - (a.createdAt?.seconds ?? 0n)),
      ),
    [pending],
  );
  return {
    team,
    members,
    membersError,
    leases,
    leasesError,
    pending: pendingList,
    pendingError,
    events,
    status,
    activity,
    inbox,
    inboxActivity,
    reloadMembers: actions.reloadMembers,
    reloadPending: actions.reloadPending,
  };
}

function teamOf(event: TeamEvent): string | undefined {
  const c = event.change;
  if (c.case === "envelope") return c.value.envelope?.team || undefined;
  if (c.case === "request") return c.value.request?.team || undefined;
  return undefined;
}
