import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { resumableStream, type StreamStatus } from "../../client/resumable-stream.js";
import { TeamError } from "../../client/team-error.js";
import { retryInfo } from "../../server/interceptors/retry-info.js";

/**
 * A refusal with a google.rpc.RetryInfo (the slow-consumer back-off, a rate) is reopened no
 * sooner than it asks: the client's own backoff starts at 100 ms, which would only be refused
 * again, and again.
 */
describe("resumableStream honours RetryInfo", () => {
  it("waits at least the delay the refusal names before it reopens", async () => {
    const closed = new AbortController();
    const statuses: StreamStatus[] = [];
    const refused = new ConnectError(
      "slow-consumer-backoff: wait",
      Code.ResourceExhausted,
      undefined,
      [retryInfo(4_200)],
    );
    expect(TeamError.fromError(refused).retryAfterMs).toBe(4_200);
    const iteration = resumableStream<number, number>({
      // biome-ignore lint/correctness/useYield: a stream refused before its first response
      open: async function* () {
        throw refused;
      },
      onResponse: (r) => r,
      closed: closed.signal,
      backoff: { initialMs: 100, random: () => 0 },
      idleTimeoutMs: 60_000,
      onStatus(status) {
        statuses.push(status);
        if (status.state === "disconnected") closed.abort();
      },
    });
    for await (const _ of iteration) {
      // nothing is delivered
    }
    const broke = statuses.find((s) => s.state === "disconnected");
    expect(broke).toMatchObject({ state: "disconnected", retryInMs: 4_200 });
  });

  it("without RetryInfo, keeps its own backoff", () => {
    const plain = new ConnectError("unavailable", Code.Unavailable);
    expect(TeamError.fromError(plain).retryAfterMs).toBeUndefined();
  });
});
