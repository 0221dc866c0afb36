import { describeEnvelope } from "../client/describe.js";
import type { Envelope } from "../gen/team/v1/records_pb.js";

/**
 * The demo's output: one timestamped line per envelope and state change, from every actor,
 * in the order they reach this process.
 *
 *   21:04:05.123 +1.402s  team-lead  ← #2 alice: plan_approval_request …
 */
export interface Transcript {
  /** Something an actor did or saw; `at` (epoch ms) when it happened elsewhere. */
  line(actor: string, text: string, at?: number): void;
  /** An envelope that reached `actor`'s inbox. */
  received(actor: string, envelope: Envelope): void;
  /** A change of state the server confirmed (request status, member status, process exit). */
  state(text: string): void;
}

export function createTranscript(
  write: (text: string) => void = (text) => process.stdout.write(text),
  startedAt = Date.now(),
): Transcript {
  const width = 10;
  const line = (actor: string, text: string, at = Date.now()) => {
    const clock = new Date(at).toISOString().slice(11, 23);
    const elapsed = `+${((at - startedAt) / 1000).toFixed(3)}s`.padStart(8);
    const prefix = `${clock} ${elapsed}  ${actor.padEnd(width)} `;
    const [first, ...rest] = text.split("\n");
    const pad = " ".repeat(prefix.length);
    write(`${prefix}${first}\n${rest.map((r) => `${pad}${r}\n`).join("")}`);
  };
  return {
    line,
    received: (actor, envelope) => line(actor, `← ${describeEnvelope(envelope)}`),
    state: (text) => line("state", text),
  };
}

/** What a teammate process writes on stdout, one JSON object a line. */
export interface TeammateLine {
  at: number;
  text: string;
}
