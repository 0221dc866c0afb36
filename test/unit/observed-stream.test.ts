import { describe, expect, it } from "vitest";
import {
  observedStream,
  observeResponse,
  type StreamEnd,
} from "../../server/interceptors/observed-stream.js";

/**
 * observedStream replaced generators of the shape below in the interceptors and the
 * Subscribe handler; every case runs through both and must log the same events.
 */
async function* asGenerator<T>(
  source: AsyncIterable<T>,
  log: string[],
  mapError: (err: unknown) => unknown,
  beforeDone: () => void,
): AsyncGenerator<T> {
  let outcome = "returned";
  try {
    try {
      yield* source;
    } catch (err) {
      throw mapError(err);
    }
    beforeDone();
    outcome = "done";
  } catch (err) {
    outcome = `error ${String(err)}`;
    throw err;
  } finally {
    log.push(`end: ${outcome}`);
  }
}

/** A source that logs what is asked of it: values, then done or an error. */
function source(log: string[], values: number[], fail?: string): AsyncIterable<number> {
  return {
    [Symbol.asyncIterator]() {
      let i = 0;
      return {
        async next() {
          log.push("source next");
          if (i < values.length) return { done: false, value: values[i++] as number };
          if (fail) throw new Error(fail);
          return { done: true, value: undefined };
        },
        async return() {
          log.push("source return");
          return { done: true, value: undefined };
        },
      };
    },
  };
}

type Run = (
  src: AsyncIterable<number>,
  log: string[],
  mapError: (err: unknown) => unknown,
  beforeDone: () => void,
) => AsyncIterable<number>;

const viaGenerator: Run = (src, log, mapError, beforeDone) =>
  asGenerator(src, log, mapError, beforeDone);
const viaObserved: Run = (src, log, mapError, beforeDone) =>
  observedStream(src, {
    mapError,
    beforeDone,
    onEnd(end) {
      log.push(
        `end: ${end.kind === "error" ? `error ${String(end.error)}` : end.kind === "done" ? "done" : "returned"}`,
      );
    },
  });

/** Consumes the stream as serveServerStream does, stopping after `take` values if given. */
async function consume(
  run: Run,
  options: { values: number[]; fail?: string; take?: number; late?: boolean },
): Promise<string[]> {
  const log: string[] = [];
  const mapError = (err: unknown) => new Error(`mapped ${(err as Error).message}`);
  const beforeDone = () => {
    log.push("before done");
    if (options.late) throw new Error("deadline");
  };
  try {
    for await (const value of run(
      source(log, options.values, options.fail),
      log,
      mapError,
      beforeDone,
    )) {
      log.push(`got ${value}`);
      if (options.take !== undefined && value >= options.take) break;
    }
    log.push("consumer: ended");
  } catch (err) {
    log.push(`consumer: ${String(err)}`);
  }
  return log;
}

describe("observedStream sees a stream as a generator around it would", () => {
  const cases: Record<string, Parameters<typeof consume>[1]> = {
    "the source ends": { values: [1, 2] },
    "the source fails: the error is mapped, then the end observed": { values: [1], fail: "boom" },
    "the consumer stops early: return() reaches the source": { values: [1, 2, 3], take: 2 },
    "the end is refused (a deadline): its error, unmapped": { values: [1], late: true },
    "an empty source": { values: [] },
  };
  for (const [name, options] of Object.entries(cases)) {
    it(name, async () => {
      const expected = await consume(viaGenerator, options);
      expect(await consume(viaObserved, options)).toEqual(expected);
    });
  }

  it("is its own iterator, and the source is asked for its iterator only when first read", async () => {
    let asked = 0;
    const src: AsyncIterable<number> = {
      [Symbol.asyncIterator]() {
        asked++;
        return source([], [7])[Symbol.asyncIterator]();
      },
    };
    const observed = observedStream(src, {});
    expect(asked).toBe(0);
    const it = observed[Symbol.asyncIterator]();
    expect(it).toBe(observed);
    expect(await it.next()).toEqual({ done: false, value: 7 });
    expect(asked).toBe(1);
  });
});

/** The interceptors' order: error mapping (inner) under the metrics (outer). */
async function consumeNested(
  nested: "generators" | "observed",
  options: { values: number[]; fail?: string; take?: number; late?: "inner" | "outer" },
): Promise<string[]> {
  const log: string[] = [];
  const layer = (name: string) => ({
    mapError: (err: unknown) => new Error(`${name}(${(err as Error).message})`),
    beforeDone: () => {
      log.push(`${name} before done`);
      if (options.late === name) throw new Error(`${name} deadline`);
    },
    onEnd: (end: StreamEnd) =>
      log.push(`${name} end: ${end.kind === "error" ? `error ${String(end.error)}` : end.kind}`),
  });
  const inner = layer("inner");
  const outer = layer("outer");
  const src = source(log, options.values, options.fail);
  let stream: AsyncIterable<number>;
  if (nested === "generators") {
    const logged = (name: string) => (end: string) => log.push(`${name} end: ${end}`);
    stream = asLoggedGenerator(
      asLoggedGenerator(src, logged("inner"), inner.mapError, inner.beforeDone),
      logged("outer"),
      outer.mapError,
      outer.beforeDone,
    );
  } else {
    stream = observedStream(observedStream(src, inner), outer);
  }
  try {
    for await (const value of stream) {
      log.push(`got ${value}`);
      if (options.take !== undefined && value >= options.take) break;
    }
    log.push("consumer: ended");
  } catch (err) {
    log.push(`consumer: ${String(err)}`);
  }
  return log;
}

/** asGenerator with its end logged as observedStream's onEnd names it. */
async function* asLoggedGenerator<T>(
  source: AsyncIterable<T>,
  ended: (end: string) => void,
  mapError: (err: unknown) => unknown,
  beforeDone: () => void,
): AsyncGenerator<T> {
  let outcome = "returned";
  try {
    try {
      yield* source;
    } catch (err) {
      throw mapError(err);
    }
    beforeDone();
    outcome = "done";
  } catch (err) {
    outcome = `error ${String(err)}`;
    throw err;
  } finally {
    ended(outcome);
  }
}

describe("a stream observed twice (one iterator, two layers) sees what two generators would", () => {
  const cases: Record<string, Parameters<typeof consumeNested>[1]> = {
    "the source ends": { values: [1, 2] },
    "the source fails: mapped by the inner layer, then by the outer": { values: [1], fail: "boom" },
    "the consumer stops early": { values: [1, 2, 3], take: 2 },
    "the inner layer refuses the end": { values: [1], late: "inner" },
    "the outer layer refuses the end": { values: [1], late: "outer" },
    "an empty source": { values: [] },
  };
  for (const [name, options] of Object.entries(cases)) {
    it(name, async () => {
      const expected = await consumeNested("generators", options);
      expect(await consumeNested("observed", options)).toEqual(expected);
    });
  }

  it("a stream already read is wrapped, not re-layered: it goes on where it was", async () => {
    const log: string[] = [];
    const inner = observedStream(source(log, [1, 2]), {
      onEnd: (end) => log.push(`inner ${end.kind}`),
    });
    const it1 = inner[Symbol.asyncIterator]();
    expect(await it1.next()).toEqual({ done: false, value: 1 });
    const outer = observedStream(inner, { onEnd: (end) => log.push(`outer ${end.kind}`) });
    const values: number[] = [];
    for await (const v of outer) values.push(v);
    expect(values).toEqual([2]);
    expect(log.filter((l) => !l.startsWith("source"))).toEqual(["inner done", "outer done"]);
  });
});

describe("observeResponse", () => {
  it("keeps the response's accessors unread, and replaces only the messages", async () => {
    let reads = 0;
    const res = Object.defineProperty(
      { stream: true as const, message: source([], [1]) },
      "header",
      {
        get: () => {
          reads++;
          return new Headers({ a: "b" });
        },
        enumerable: true,
      },
    ) as { stream: true; message: AsyncIterable<number>; header: Headers };
    const seen: string[] = [];
    const observed = observeResponse(res, { onEnd: (end) => seen.push(end.kind) });
    expect(reads).toBe(0);
    expect(Object.getOwnPropertyDescriptor(observed, "header")?.get).toBeTypeOf("function");
    expect(observed.stream).toBe(true);
    const values: number[] = [];
    for await (const v of observed.message) values.push(v);
    expect(values).toEqual([1]);
    expect(seen).toEqual(["done"]);
    expect(observed.header.get("a")).toBe("b");
    // The original response is untouched.
    expect(res.message).not.toBe(observed.message);
  });
});
