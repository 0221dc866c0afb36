import { M, type Rule } from "./rule.js";

// Who may read the whole team, and that an observer only reads (docs/watch.md).

/**
 * What an observer may call: reads of the team, nothing that writes or reads an inbox; and
 * RotateToken, which changes only its own credential (another member's is the lead's).
 */
const OBSERVER_MAY = new Set<unknown>([
  M.listMembers,
  M.rotateToken,
  M.listRequests,
  M.getRequest,
  M.awaitRequest,
  M.listAttempts,
  M.watchTeam,
  M.exportTeam,
  M.getTask,
  M.listTasks,
  M.listLeases,
  M.getThread,
  M.listThreads,
  M.searchMessages,
]);

/**
 * observer-read-only: an observer watches; every write is refused, and so are Subscribe and
 * ReadInbox (an observer receives no messages: there is nothing to read).
 */
export const observerReadOnly: Rule = {
  id: "observer-read-only",
  refusal: "permission-denied",
  check({ method, caller }) {
    if (caller?.role !== "observer" || OBSERVER_MAY.has(method)) return undefined;
    const inbox = method === M.subscribe || method === M.readInbox || method === M.ack;
    return {
      sentence: inbox
        ? `an observer has no inbox (${method.name}): WatchTeam shows everything the team stores`
        : `an observer is read-only: ${method.name} is refused (it may ListMembers, ListRequests, ` +
          "GetRequest, AwaitRequest, ListAttempts, WatchTeam, ExportTeam, GetTask, ListTasks, ListLeases, GetThread, ListThreads, SearchMessages and RotateToken its own token)",
    };
  },
};

/** watch-lead-or-observer: the whole team's feed is for the lead and observers. */
export const watchLeadOrObserver: Rule = {
  id: "watch-lead-or-observer",
  refusal: "permission-denied",
  check({ method, caller }) {
    if (method !== M.watchTeam || caller?.role === "lead" || caller?.role === "observer") {
      return undefined;
    }
    return {
      sentence:
        "only the lead and observers may watch the whole team; a teammate follows its own inbox (Subscribe)",
    };
  },
};

/** export-lead-or-observer: the whole team's history is for the lead and observers. */
export const exportLeadOrObserver: Rule = {
  id: "export-lead-or-observer",
  refusal: "permission-denied",
  check({ method, caller }) {
    if (method !== M.exportTeam || caller?.role === "lead" || caller?.role === "observer") {
      return undefined;
    }
    return {
      sentence:
        "only the lead and observers may export the team; a teammate reads its own inbox (ReadInbox)",
    };
  },
};
