import { Code, ConnectError } from "@connectrpc/connect";
import { useEffect, useState } from "preact/hooks";
import { refusalText } from "../refusal.js";
import { forgetToken, storedToken, storeToken } from "../session.js";
import { type Session, signIn } from "../session-state.js";
import { ConsoleView } from "./console-view.js";
import { SignIn } from "./sign-in.js";

/** Signed out: the sign-in form. Signed in: the console. A reload keeps the tab's session. */
export function App() {
  const [session, setSession] = useState<Session>();
  const [notice, setNotice] = useState<string>();
  const [restoring, setRestoring] = useState(() => storedToken() !== undefined);

  useEffect(() => {
    const token = storedToken();
    if (token === undefined) return;
    signIn(token).then(
      (s) => {
        setSession(s);
        setRestoring(false);
      },
      (err) => {
        // A token the server no longer takes is forgotten; an unreachable server is not
        // a reason to forget it (reload to try again).
        if (err instanceof ConnectError && err.code === Code.Unauthenticated) forgetToken();
        setNotice(`Not signed in: ${refusalText(err)}`);
        setRestoring(false);
      },
    );
  }, []);

  if (restoring) return <p class="restoring">Signing in…</p>;
  if (!session) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(s, token) => {
          storeToken(token);
          setNotice(undefined);
          setSession(s);
        }}
      />
    );
  }
  return (
    <ConsoleView
      session={session}
      onSignOut={() => {
        forgetToken();
        setSession(undefined);
        setNotice("Signed out: the token is gone from this tab.");
      }}
    />
  );
}
