import { useRef, useState } from "preact/hooks";
import { refusalText } from "../refusal.js";
import { type Session, signIn } from "../session-state.js";

interface Props {
  notice: string | undefined;
  onSignedIn(session: Session, token: string): void;
}

/**
 * The token field has no `name`, so even a form submitted without this script (which the
 * page's CSP also forbids: form-action 'none') could not put the token in a URL.
 */
export function SignIn({ notice, onSignedIn }: Props) {
  const field = useRef<HTMLInputElement>(null);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    const token = field.current?.value.trim() ?? "";
    if (token === "") {
      setError("Paste the token CreateTeam or AddMember gave you (tp_…).");
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const session = await signIn(token);
      if (field.current) field.current.value = "";
      setBusy(false);
      onSignedIn(session, token);
    } catch (err) {
      setBusy(false);
      setError(refusalText(err));
    }
  };

  return (
    <main class="sign-in">
      <form id="sign-in" onSubmit={submit}>
        <h1>team-protocols</h1>
        <p>
          Sign in with a member's token: the lead's, a teammate's (its inbox and the tasks), or an
          observer's to watch read-only.
        </p>
        {notice && <p class="notice">{notice}</p>}
        <label>
          Token
          <input
            ref={field}
            id="token"
            type="password"
            autocomplete="off"
            spellcheck={false}
            placeholder="tp_…"
          />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        {error && (
          <p class="refusal" role="alert">
            {error}
          </p>
        )}
        <p class="hint">
          The token stays in this tab (sessionStorage) and is sent only in the Authorization header
          of each call.
        </p>
      </form>
    </main>
  );
}
