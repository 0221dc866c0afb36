import { attemptOutcomeName } from "@team-protocols/client/names.js";
import { AttemptOutcome } from "@team-protocols/contract/team/v1/enums_pb.js";
import type { Attempt } from "@team-protocols/contract/team/v1/records_pb.js";
import { useEffect, useMemo, useState } from "preact/hooks";
import { refusalText } from "../refusal.js";
import type { Session } from "../session-state.js";
import type { TeamState } from "../team-state.js";
import { throttle } from "../throttle.js";
import { clockTime, isoTime } from "../words.js";

interface Filters {
  member: string;
  outcome: AttemptOutcome;
  requestId: string;
}

const NO_FILTERS: Filters = { member: "", outcome: AttemptOutcome.UNSPECIFIED, requestId: "" };

/**
 * The protocol journal (ListAttempts): every protocol step tried, accepted or refused, newest
 * first, filtered by member, outcome and request. It is read again when the filters change,
 * on Refresh, and after feed activity (an accepted step is also an event; a refused one is
 * not, so Refresh is there for those).
 */
export function JournalPanel({ session, state }: { session: Session; state: TeamState }) {
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [requestField, setRequestField] = useState("");
  const [attempts, setAttempts] = useState<Attempt[]>([]);
  const [nextPage, setNextPage] = useState("");
  const [error, setError] = useState<string>();

  const load = useMemo(
    () => (f: Filters, pageToken: string) =>
      session.rpc
        .listAttempts({ ...f, pageSize: 50, pageToken })
        .then((r) => {
          setAttempts((shown) => (pageToken === "" ? r.attempts : [...shown, ...r.attempts]));
          setNextPage(r.nextPageToken);
          setError(undefined);
        })
        .catch((err) => setError(refusalText(err))),
    [session],
  );
  const reload = useMemo(() => throttle(() => void load(filters, ""), 1_000), [load, filters]);
  useEffect(() => {
    void load(filters, "");
  }, [load, filters]);
  useEffect(() => {
    if (state.activity > 0) reload();
  }, [state.activity, reload]);
  useEffect(() => () => reload.cancel(), [reload]);

  return (
    <section id="journal" class="panel">
      <h2>Journal of attempts</h2>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters({ ...filters, requestId: requestField.trim() });
        }}
      >
        <label>
          Member
          <select
            id="journal-member"
            value={filters.member}
            onChange={(e) =>
              setFilters({ ...filters, member: (e.target as HTMLSelectElement).value })
            }
          >
            <option value="">everyone</option>
            {state.members.map((m) => (
              <option key={m.name} value={m.name}>
                {m.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Outcome
          <select
            id="journal-outcome"
            value={String(filters.outcome)}
            onChange={(e) =>
              setFilters({
                ...filters,
                outcome: Number((e.target as HTMLSelectElement).value) as AttemptOutcome,
              })
            }
          >
            <option value={String(AttemptOutcome.UNSPECIFIED)}>any</option>
            <option value={String(AttemptOutcome.ACCEPTED)}>accepted</option>
            <option value={String(AttemptOutcome.REFUSED)}>refused</option>
          </select>
        </label>
        <label>
          Request
          <input
            id="journal-request"
            placeholder="req_…"
            value={requestField}
            onInput={(e) => setRequestField((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit">Filter</button>
        <button type="button" id="journal-refresh" onClick={() => void load(filters, "")}>
          Refresh
        </button>
      </form>
      {error && (
        <p class="refusal" role="alert">
          {error}
        </p>
      )}
      <table>
        <thead>
          <tr>
            <th>At</th>
            <th>Member</th>
            <th>Action</th>
            <th>To</th>
            <th>Request</th>
            <th>Outcome</th>
          </tr>
        </thead>
        <tbody>
          {attempts.map((a) => (
            <tr
              key={String(a.id)}
              data-attempt={String(a.id)}
              data-outcome={attemptOutcomeName(a.outcome)}
            >
              <td title={isoTime(a.at)}>{clockTime(a.at)}</td>
              <td>{a.member}</td>
              <td>{a.action}</td>
              <td>{a.to || "-"}</td>
              <td>
                <code>{a.requestId || "-"}</code>
              </td>
              <td class={`outcome ${attemptOutcomeName(a.outcome)}`}>
                {a.outcome === AttemptOutcome.REFUSED ? (
                  <>
                    refused: {a.rule || "-"} ({a.code})<div class="message">{a.message}</div>
                  </>
                ) : (
                  attemptOutcomeName(a.outcome)
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {attempts.length === 0 && !error && <p class="empty">No attempts match.</p>}
      {nextPage !== "" && (
        <button type="button" class="more" onClick={() => void load(filters, nextPage)}>
          Older attempts
        </button>
      )}
    </section>
  );
}
