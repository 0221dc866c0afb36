import { Code, ConnectError } from "@connectrpc/connect";
import { memberStatusName, requestStatusName } from "@team-protocols/client/names.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";

/**
 * `team down`'s half on the server: the lead asks every active teammate of the file to stop
 * (the shutdown protocol), waits for the answers until the deadline, and with `force` removes
 * the ones that did not agree (RemoveMember). Members already stopped are left as they are.
 */

export interface DownResult {
  name: string;
  /** approved | rejected: REASON | no answer | removed | already stopped | not a member */
  outcome: string;
}

export async function shutDownMembers(
  lead: TeamClient,
  names: string[],
  o: { deadlineMs: number; force: boolean; reason: string },
): Promise<DownResult[]> {
  const current = new Map((await lead.members()).map((m) => [m.name, m]));
  const deadline = Date.now() + o.deadlineMs;
  return Promise.all(
    names.map(async (name): Promise<DownResult> => {
      const m = current.get(name);
      if (!m) return { name, outcome: "not a member" };
      if (memberStatusName(m.status) !== "active") return { name, outcome: "already stopped" };
      let outcome: string;
      try {
        const sent = await lead.requestShutdown(name, { reason: o.reason });
        const answered = await lead.awaitRequest(sent.requestId, {
          timeoutMs: Math.max(1, deadline - Date.now()),
        });
        const status = requestStatusName(answered.status);
        const response = answered.response?.kind;
        outcome =
          status === "rejected" && response?.case === "shutdownResponse"
            ? `rejected: ${response.value.reason}`
            : status === "pending"
              ? "no answer"
              : status;
        if (status === "approved") return { name, outcome };
        if (status === "pending") await lead.cancelRequest(sent.requestId).catch(() => undefined);
      } catch (err) {
        outcome = `not asked: ${ConnectError.from(err).rawMessage}`;
        if (ConnectError.from(err).code === Code.Unauthenticated) throw err;
      }
      if (!o.force) return { name, outcome };
      await lead.removeMember(name);
      return { name, outcome: `${outcome}; removed (--force)` };
    }),
  );
}
