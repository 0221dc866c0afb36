import { describeEnvelope } from "../client/describe.js";
import { createTeamClient } from "../client/team-client.js";
import { createRacer } from "./racers.js";
import { createPlanner, createTester, type TeammateContext } from "./teammates.js";
import type { TeammateLine } from "./transcript.js";

/**
 * One teammate process of the demo: TEAM_URL, TEAM_TOKEN and DEMO_ROLE (planner | tester | racer)
 * in the environment. It reads its inbox from the start and lets its script answer each
 * envelope, writing what it sees and does to stdout as JSON lines for the transcript. Exits
 * 0 after approving its own shutdown, 1 on any failure.
 */
const say = (text: string) => {
  const line: TeammateLine = { at: Date.now(), text };
  process.stdout.write(`${JSON.stringify(line)}\n`);
};

const role = process.env.DEMO_ROLE;
const scripts: Record<string, () => ReturnType<typeof createPlanner>> = {
  planner: createPlanner,
  tester: createTester,
  racer: createRacer,
};
const script = role ? scripts[role]?.() : undefined;
if (!script || !process.env.TEAM_URL || !process.env.TEAM_TOKEN) {
  process.stderr.write(
    "usage: TEAM_URL=… TEAM_TOKEN=… DEMO_ROLE=planner|tester|racer teammate.ts\n",
  );
  process.exit(2);
}

const client = createTeamClient({ baseUrl: process.env.TEAM_URL, token: process.env.TEAM_TOKEN });
const ctx: TeammateContext = { client, say };
const inbox = client.inbox({
  afterSeq: 0,
  onStatus: (s) => {
    if (s.state === "disconnected")
      say(`inbox disconnected (${s.error?.message ?? "stream ended"})`);
  },
});
try {
  for await (const envelope of inbox) {
    say(`← ${describeEnvelope(envelope)}`);
    if ((await script.handle(envelope, ctx)) === "exit") break;
  }
  process.exitCode = 0;
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exitCode = 1;
}
