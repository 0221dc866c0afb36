import { memberRoleName, permissionModeName } from "@team-protocols/client/names.js";
import { MemberRole, PermissionMode } from "@team-protocols/contract/team/v1/enums_pb.js";
import { useState } from "preact/hooks";
import { httpMcpConfig, teamUpEntry } from "../member-config.js";
import { refusalText } from "../refusal.js";
import type { Session } from "../session-state.js";
import type { TeamState } from "../team-state.js";

const ROLES = [MemberRole.TEAMMATE, MemberRole.OBSERVER, MemberRole.APPROVER];
const MODES = [
  PermissionMode.UNSPECIFIED,
  PermissionMode.DEFAULT,
  PermissionMode.ACCEPT_EDITS,
  PermissionMode.BYPASS_PERMISSIONS,
  PermissionMode.PLAN,
];

interface Added {
  name: string;
  token: string;
  role: MemberRole;
  mode: PermissionMode;
}

/**
 * The lead adds a member (AddMember: name, role, permission mode) and gets what the member
 * needs, once: its token, its MCP configuration and its `team up` entry, each with a Copy
 * button. The server shows a token only in AddMember's answer, so does the page: it is gone
 * when the box is closed.
 */
export function AddMember({ session, state }: { session: Session; state: TeamState }) {
  const [name, setName] = useState("");
  const [role, setRole] = useState(MemberRole.TEAMMATE);
  const [mode, setMode] = useState(PermissionMode.UNSPECIFIED);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [added, setAdded] = useState<Added>();

  const add = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const r = await session.rpc.addMember({ name: name.trim(), role, permissionMode: mode });
      setAdded({
        name: r.member?.name ?? name.trim(),
        token: r.token,
        role: r.member?.role ?? role,
        mode: r.member?.permissionMode ?? mode,
      });
      setName("");
      state.reloadMembers();
    } catch (err) {
      setError(refusalText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div id="add-member">
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          void add();
        }}
      >
        <label>
          Name
          <input
            name="name"
            placeholder="alice"
            value={name}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Role
          <select
            name="role"
            value={String(role)}
            onChange={(e) => setRole(Number((e.target as HTMLSelectElement).value) as MemberRole)}
          >
            {ROLES.map((r) => (
              <option key={r} value={String(r)}>
                {memberRoleName(r)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Mode
          <select
            name="mode"
            value={String(mode)}
            onChange={(e) =>
              setMode(Number((e.target as HTMLSelectElement).value) as PermissionMode)
            }
          >
            {MODES.map((m) => (
              <option key={m} value={String(m)}>
                {m === PermissionMode.UNSPECIFIED ? "the lead's" : permissionModeName(m)}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" class="add" disabled={busy}>
          Add member
        </button>
        {error && (
          <span class="refusal" role="alert">
            {error}
          </span>
        )}
      </form>
      {added && <NewMember session={session} added={added} onClose={() => setAdded(undefined)} />}
    </div>
  );
}

function NewMember({
  session,
  added,
  onClose,
}: {
  session: Session;
  added: Added;
  onClose(): void;
}) {
  const entry = teamUpEntry(session.team, added.name, added.role, added.mode, added.token);
  return (
    <div class="new-member" data-member={added.name}>
      <p>
        <b>{added.name}</b> added ({memberRoleName(added.role)}). Its token is shown this once: copy
        what it needs now.
      </p>
      <Copyable label="Token" kind="token" text={added.token} />
      <Copyable
        label="MCP configuration (this server's /mcp endpoint)"
        kind="mcp-config"
        text={httpMcpConfig(window.location.origin, added.token)}
      />
      {entry ? (
        <Copyable label="team up entry" kind="team-up" text={entry} />
      ) : (
        <p class="hint">
          `team up` runs teammates and observers; give an approver its MCP configuration.
        </p>
      )}
      <button type="button" class="close" onClick={onClose}>
        Done (forget the token)
      </button>
    </div>
  );
}

/** A text to copy: shown whole (select it by hand if the clipboard is refused). */
function Copyable({ label, kind, text }: { label: string; kind: string; text: string }) {
  const [said, setSaid] = useState<string>();
  const copy = () =>
    navigator.clipboard.writeText(text).then(
      () => setSaid("copied"),
      (err) =>
        setSaid(`not copied (${err instanceof Error ? err.message : String(err)}): select it`),
    );
  return (
    <div class="copyable" data-copy={kind}>
      <span class="label">{label}</span>
      <button type="button" class="copy" onClick={() => void copy()}>
        Copy
      </button>
      {said && <span class="said">{said}</span>}
      <pre>{text}</pre>
    </div>
  );
}
