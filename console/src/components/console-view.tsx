import { memberRoleName } from "@team-protocols/client/names.js";
import { useState } from "preact/hooks";
import { isLead, mayWatch, mayWrite, type Session } from "../session-state.js";
import { useTeamState } from "../team-state.js";
import { ComposePanel } from "./compose-panel.js";
import { FeedPanel } from "./feed-panel.js";
import { InboxPanel } from "./inbox-panel.js";
import { JournalPanel } from "./journal-panel.js";
import { MembersPanel } from "./members-panel.js";
import { RequestsPanel } from "./requests-panel.js";
import { SearchPanel } from "./search-panel.js";
import { TasksBoard } from "./tasks-board.js";
import { ThreadPanel } from "./thread-panel.js";

interface Props {
  session: Session;
  onSignOut(): void;
}

export function ConsoleView({ session, onSignOut }: Props) {
  const state = useTeamState(session);
  const write = mayWrite(session);
  // The thread a click opened (a row of the feed, the inbox or the search results).
  const [thread, setThread] = useState<string>();
  return (
    <div class="console">
      <header>
        <h1>team-protocols</h1>
        {(state.team || session.team) && (
          <span class="team">team {state.team || session.team}</span>
        )}
        <span id="who">
          signed in as <b>{session.you}</b> ({memberRoleName(session.role)})
        </span>
        {!write && (
          <span id="read-only" class="badge" title="observers may list and watch, nothing else">
            read-only
          </span>
        )}
        <button id="sign-out" type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <TasksBoard session={session} state={state} isLead={isLead(session)} />
      <main class="panels">
        <div class="column">
          <MembersPanel session={session} state={state} mayStop={isLead(session)} />
          <RequestsPanel session={session} state={state} mayAnswer={write} />
          {write && <ComposePanel session={session} state={state} />}
        </div>
        {mayWatch(session) ? (
          <FeedPanel state={state} onOpenThread={setThread} />
        ) : (
          <InboxPanel session={session} state={state} onOpenThread={setThread} />
        )}
        <div class="history">
          <SearchPanel session={session} onOpenThread={setThread} />
          {thread && (
            <ThreadPanel
              key={thread}
              session={session}
              threadId={thread}
              onClose={() => setThread(undefined)}
            />
          )}
        </div>
        <JournalPanel session={session} state={state} />
      </main>
    </div>
  );
}
