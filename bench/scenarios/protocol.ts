import { within } from "../bounded.js";
import { as, Connections } from "../connections.js";
import { LatencyHistogram, type LatencySummary } from "../histogram.js";
import { openStream } from "../subscriber.js";
import { createBenchTeam, LEAD_NAME, text } from "../teams.js";
import type { ScenarioContext } from "./context.js";

export interface ProtocolResult {
  rounds: number;
  completed: number;
  /** Lead sends shutdown_request -> the lead's stream has the teammate's approval. */
  roundTrip: LatencySummary;
  /** Lead sends the request -> the teammate's stream has it. */
  requestLeg: LatencySummary;
  /** The teammate has the request -> the lead's stream has the approval (incl. its Send). */
  responseLeg: LatencySummary;
}

/**
 * The shutdown handshake end to end, as agents run it: the lead (subscribed) asks a
 * teammate (subscribed) to stop; the teammate, on reading the request from its stream,
 * approves; the clock stops when the approval is in the lead's stream. An approved
 * teammate is stopped, so each round uses a fresh one.
 */
export async function runProtocol(ctx: ScenarioContext): Promise<ProtocolResult> {
  const p = ctx.profile.protocol;
  const { signal } = ctx;
  const connections = new Connections(ctx.url, 2);
  try {
    await connections.open();
    const team = await createBenchTeam(connections, ctx.runId, "protocol", p.rounds, signal);
    const lead = team.lead;
    const leadClient = connections.client(0);
    const mateClient = connections.client(1);

    // Approvals the lead's stream has read, by request id (one can arrive before the
    // lead's own Send returns the id: the teammate is that quick).
    const approvals = new Map<string, number>();
    const approvalWaiters = new Map<string, (at: number) => void>();
    let leadLive: () => void = () => {};
    const leadReady = new Promise<void>((resolve) => {
      leadLive = resolve;
    });
    const leadStream = openStream(
      leadClient,
      lead.token,
      (env, at) => {
        const m = env.message?.kind;
        if (m?.case === "text") leadLive();
        if (m?.case !== "shutdownResponse") return;
        approvals.set(m.value.requestId, at);
        approvalWaiters.get(m.value.requestId)?.(at);
      },
      { afterSeq: 0n, signal },
    );
    // Every teammate's inbox gets one message now, so a stream shows it is live by
    // delivering it; and one to the lead, for the lead's stream.
    await leadClient.send({ to: "*", message: text("ready") }, as(lead.token));
    const first = team.teammates[0];
    if (first) {
      await mateClient.send({ to: LEAD_NAME, message: text("ready") }, as(first.token));
    }
    await within("the lead's stream to be live", 10_000, leadReady, signal);

    const roundTrip = new LatencyHistogram();
    const requestLeg = new LatencyHistogram();
    const responseLeg = new LatencyHistogram();
    for (const mate of team.teammates) {
      signal.throwIfAborted();
      let requestAt = 0;
      let answerError: Error | undefined;
      const stream = openStream(
        mateClient,
        mate.token,
        (env, at) => {
          if (env.message?.kind.case !== "shutdownRequest") return;
          requestAt = at;
          const answer = {
            to: LEAD_NAME,
            message: {
              kind: {
                case: "shutdownResponse" as const,
                value: { requestId: env.requestId, approve: true },
              },
            },
          };
          mateClient.send(answer, as(mate.token, { signal })).catch((err: Error) => {
            answerError = err;
          });
        },
        { afterSeq: 0n, signal },
      );
      await within(`${mate.name}'s stream to be live`, p.roundTimeoutMs, stream.firstEnvelope);

      const started = performance.now();
      const sent = await leadClient.send(
        {
          to: mate.name,
          message: { kind: { case: "shutdownRequest", value: { reason: "bench" } } },
        },
        as(lead.token, { signal }),
      );
      const approvedAt = await within(
        `the approval of ${sent.requestId}`,
        p.roundTimeoutMs,
        new Promise<number>((resolve) => {
          const early = approvals.get(sent.requestId);
          if (early !== undefined) resolve(early);
          else approvalWaiters.set(sent.requestId, resolve);
        }),
        signal,
      ).catch((err: Error) => {
        throw answerError
          ? new Error(`${mate.name} could not approve: ${answerError.message}`)
          : err;
      });
      approvalWaiters.delete(sent.requestId);
      roundTrip.recordMs(approvedAt - started);
      requestLeg.recordMs(requestAt - started);
      responseLeg.recordMs(approvedAt - requestAt);
      // The server ends an approved teammate's stream; closing covers a slow end.
      stream.close();
      await stream.ended;
    }
    leadStream.close();
    const result = {
      rounds: p.rounds,
      completed: roundTrip.count,
      roundTrip: roundTrip.summary(),
      requestLeg: requestLeg.summary(),
      responseLeg: responseLeg.summary(),
    };
    ctx.log(
      `  protocol round trip: p50 ${result.roundTrip.p50Ms} ms, p99 ${result.roundTrip.p99Ms} ms ` +
        `(request leg p50 ${result.requestLeg.p50Ms} ms, response leg p50 ${result.responseLeg.p50Ms} ms)`,
    );
    return result;
  } finally {
    connections.close();
  }
}
