import { forEachLimited } from "./bounded.js";
import { as, type Connections } from "./connections.js";

export const LEAD_NAME = "team-lead";

export interface BenchMember {
  name: string;
  token: string;
}

export interface BenchTeam {
  name: string;
  lead: BenchMember;
  teammates: BenchMember[];
}

// Enough parallel AddMember calls to make a 10,000-member setup take seconds, few enough
// not to queue behind the server's connection pool.
const SETUP_CONCURRENCY = 16;

/** Teammate names sort in creation order: m00000, m00001, ... */
export const teammateName = (i: number) => `m${String(i).padStart(5, "0")}`;

/** A new team (named `<runId>-<label>`) with a lead and `teammates` teammates. */
export async function createBenchTeam(
  connections: Connections,
  runId: string,
  label: string,
  teammates: number,
  signal: AbortSignal,
): Promise<BenchTeam> {
  const name = `${runId}-${label}`;
  const created = await connections.client(0).createTeam({ team: name }, { signal });
  const lead = { name: LEAD_NAME, token: created.token };
  const members: BenchMember[] = new Array(teammates);
  const indexes = Array.from({ length: teammates }, (_, i) => i);
  await forEachLimited(
    indexes,
    SETUP_CONCURRENCY,
    async (i) => {
      const mate = teammateName(i);
      const added = await connections
        .client(i)
        .addMember({ name: mate }, as(lead.token, { signal }));
      members[i] = { name: mate, token: added.token };
    },
    signal,
  );
  return { name, lead, teammates: members };
}

/** A plain text message, as Send takes it. */
export const text = (value: string) => ({ kind: { case: "text" as const, value } });
