/** How a stream ended, for StreamHooks.onEnd. */
export type StreamEnd =
  | { kind: "done" }
  | { kind: "error"; error: unknown }
  /** The consumer stopped early (return()): the client went away, or the call ended. */
  | { kind: "returned" };

export interface StreamHooks {
  /** The error to throw instead of one the source threw. */
  mapError?(error: unknown): unknown;
  /** Runs when the source is done; what it throws ends the stream instead (unmapped). */
  beforeDone?(): void;
  /** Runs once, however the stream ended (after mapError and beforeDone). */
  onEnd?(end: StreamEnd): void;
}

type Outcome<T> = { result: IteratorResult<T> } | { error: unknown };

/**
 * `source` seen through `hooks`, as a generator around `yield* source` with try/catch/finally
 * would see it (the same order of events, return() passed on to the source), but as a plain
 * iterator object: an idle subscription is the server's commonest state, open for hours,
 * and a suspended async generator keeps its frame and request queue on the heap, and
 * closures as much again (`npm run bench:heap` shows what an idle stream holds).
 *
 * A stream already observed, and not yet read, is observed again by the same iterator with
 * one more layer of hooks (outermost last) instead of an iterator around it: the events are
 * those of one wrapper around the other, but an idle stream under the metrics and the error
 * mapping holds one iterator and one pending read, not two of each.
 */
export function observedStream<T>(source: AsyncIterable<T>, hooks: StreamHooks): AsyncIterable<T> {
  if (source instanceof ObservedIterator && !source.started) return source.around(hooks);
  return new ObservedIterator(source, hooks);
}

/**
 * Its own iterable, as a generator object is: one object per stream, no closure. Each
 * layer of hooks behaves as its own wrapper would (layer 0 innermost): it sees what the
 * layer under it passed on, and ends once, its own bit in `#ended`.
 */
class ObservedIterator<T> implements AsyncIterableIterator<T> {
  /** Bit i: layer i has ended (then it answers done without asking the layer under it). */
  #ended = 0;
  #iterator: AsyncIterator<T> | undefined;

  constructor(
    private readonly iterable: AsyncIterable<T>,
    /** One layer, or the layers innermost first (an array only when there are several). */
    private readonly hooks: StreamHooks | readonly StreamHooks[],
  ) {}

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  /** Whether it has been read (or returned): from then on it is no longer re-layered. */
  get started(): boolean {
    return this.#iterator !== undefined || this.#ended !== 0;
  }

  /** The same stream with `outer` around these layers; this iterator is not to be read. */
  around(outer: StreamHooks): ObservedIterator<T> {
    const layers = Array.isArray(this.hooks) ? this.hooks : [this.hooks as StreamHooks];
    return new ObservedIterator(this.iterable, [...layers, outer]);
  }

  /** The source's iterator, asked for on first use (as a generator's body starts then). */
  private get source(): AsyncIterator<T> {
    this.#iterator ??= this.iterable[Symbol.asyncIterator]();
    return this.#iterator;
  }

  next(): Promise<IteratorResult<T>> {
    const count = this.#count();
    // A wrapper that ended answers done without asking the one under it: the outermost
    // ended layer is where this read starts, with done.
    let start = count;
    while (start > 0 && !this.#hasEnded(start - 1)) start--;
    if (start === count) return Promise.resolve({ done: true, value: undefined });
    let pending: Promise<IteratorResult<T>>;
    if (start > 0) {
      pending = Promise.resolve({ done: true, value: undefined });
    } else {
      try {
        pending = this.source.next();
      } catch (error) {
        // A source whose next() throws at once (not a generator) fails like one that rejects.
        pending = Promise.reject(error);
      }
    }
    return pending.then(
      (result) => this.#settle(start, { result }),
      (error: unknown) => this.#settle(start, { error }),
    );
  }

  async return(value?: unknown): Promise<IteratorResult<T>> {
    // Each wrapper's return() passes on to the one under it unless it has ended, and then
    // observes its end (in a finally: whatever the layer under it threw).
    const count = this.#count();
    let lowest = count - 1;
    while (lowest > 0 && !this.#hasEnded(lowest)) lowest--;
    let failed: { error: unknown } | undefined;
    if (!this.#hasEnded(lowest)) {
      try {
        await this.source.return?.();
      } catch (error) {
        failed = { error };
      }
    }
    for (let i = lowest; i < count; i++) {
      try {
        this.#end(i, { kind: "returned" });
      } catch (error) {
        failed = { error };
      }
    }
    if (failed) throw failed.error;
    return { done: true, value: value as T };
  }

  /** What the layers from `start` outward make of `outcome`, each in turn. */
  #settle(start: number, outcome: Outcome<T>): IteratorResult<T> {
    const count = this.#count();
    for (let i = start; i < count; i++) outcome = this.#through(i, outcome);
    if ("error" in outcome) throw outcome.error;
    return outcome.result;
  }

  /** One layer, as its wrapper's next() would settle: what it passes on to the layer above. */
  #through(i: number, outcome: Outcome<T>): Outcome<T> {
    const hooks = this.#layer(i);
    try {
      if ("error" in outcome) {
        const thrown = hooks.mapError ? hooks.mapError(outcome.error) : outcome.error;
        this.#end(i, { kind: "error", error: thrown });
        return { error: thrown };
      }
      if (outcome.result.done !== true) return outcome;
      try {
        hooks.beforeDone?.();
      } catch (error) {
        this.#end(i, { kind: "error", error });
        return { error };
      }
      this.#end(i, { kind: "done" });
      return outcome;
    } catch (error) {
      // A hook that threw: the layer above sees that instead.
      return { error };
    }
  }

  #end(i: number, how: StreamEnd): void {
    if (this.#hasEnded(i)) return;
    this.#ended |= 1 << i;
    this.#layer(i).onEnd?.(how);
  }

  #hasEnded(i: number): boolean {
    return (this.#ended & (1 << i)) !== 0;
  }

  #count(): number {
    return Array.isArray(this.hooks) ? this.hooks.length : 1;
  }

  #layer(i: number): StreamHooks {
    return Array.isArray(this.hooks) ? (this.hooks[i] as StreamHooks) : (this.hooks as StreamHooks);
  }
}

/**
 * A stream response whose messages are seen through `hooks`, for an interceptor: a copy of
 * `res` made from its property descriptors, not with a spread, which would read every
 * property: on the gRPC bare-stream path the headers and trailers are accessors that make
 * them only when read (grpc/call-objects.ts), and an idle stream would then hold
 * two Headers for nothing.
 */
export function observeResponse<R extends { readonly message: AsyncIterable<unknown> }>(
  res: R,
  hooks: StreamHooks,
): R {
  const properties = Object.getOwnPropertyDescriptors(res) as PropertyDescriptorMap;
  properties.message = {
    value: observedStream(res.message, hooks),
    enumerable: true,
    writable: false,
    configurable: true,
  };
  return Object.defineProperties(Object.create(Object.getPrototypeOf(res)), properties) as R;
}
