import type http2 from "node:http2";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { guardSlowStream } from "../../server/http/slow-consumer-guard.js";

/** A real Node stream that never drains: every write after the first fills its buffer. */
function stalledStream() {
  const stream = new Writable({ highWaterMark: 1, write() {} }) as Writable & { close(): void };
  stream.close = () => stream.destroy();
  return stream as unknown as http2.ServerHttp2Stream;
}

describe("slow-consumer guard", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  for (const limitMs of [30_000, 1_500]) {
    it(`cuts a stream whose write waited the limit it was given (${limitMs} ms), not a moment before`, () => {
      vi.useFakeTimers();
      const onCut = vi.fn();
      const stream = stalledStream();
      const signal = guardSlowStream(stream, limitMs, onCut);
      stream.write(new Uint8Array(8));
      vi.advanceTimersByTime(limitMs - 1);
      expect(onCut).not.toHaveBeenCalled();
      expect(signal.aborted).toBe(false);
      vi.advanceTimersByTime(1);
      expect(onCut).toHaveBeenCalledTimes(1);
      expect(signal.aborted).toBe(true);
    });
  }

  it("arms nothing for a write to a stream the client already reset (no cut, no log, 30 s later)", () => {
    vi.useFakeTimers();
    const onCut = vi.fn();
    const stream = stalledStream();
    const signal = guardSlowStream(stream, 30_000, onCut);
    stream.destroy(); // the client's RST_STREAM
    vi.runAllTicks(); // 'close' is emitted on the next tick
    stream.write(new Uint8Array(8)); // the handler's response, written after the reset
    vi.advanceTimersByTime(60_000);
    expect(onCut).not.toHaveBeenCalled();
    expect(signal.aborted).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
