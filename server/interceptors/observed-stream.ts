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

/**
 * `source` seen through `hooks`, as a generator around `yield* source` with try/catch/finally
 * would see it (the same order of events, return() passed on to the source), but as a plain
 * iterator object: an idle subscription is the server's commonest state, open for hours
 * under three such wrappers (metrics, error mapping, the handler's deadline check), and a
 * suspended async generator keeps its frame and request queue on the heap, and closures as
 * much again (`npm run bench:heap` shows what an idle stream holds).
 */
export function observedStream<T>(source: AsyncIterable<T>, hooks: StreamHooks): AsyncIterable<T> {
  return new ObservedIterator(source, hooks);
}

/** Its own iterable, as a generator object is: one object per stream, no closure. */
class ObservedIterator<T> implements AsyncIterableIterator<T> {
  #ended = false;
  #iterator: AsyncIterator<T> | undefined;

  constructor(
    private readonly iterable: AsyncIterable<T>,
    private readonly hooks: StreamHooks,
  ) {}

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  /** The source's iterator, asked for on first use (as a generator's body starts then). */
  private get source(): AsyncIterator<T> {
    this.#iterator ??= this.iterable[Symbol.asyncIterator]();
    return this.#iterator;
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#ended) return Promise.resolve({ done: true, value: undefined });
    let pending: Promise<IteratorResult<T>>;
    try {
      pending = this.source.next();
    } catch (error) {
      // A source whose next() throws at once (not a generator) fails like one that rejects.
      pending = Promise.reject(error);
    }
    return pending.then(
      (result) => this.#result(result),
      (error: unknown) => this.#fail(error),
    );
  }

  async return(value?: unknown): Promise<IteratorResult<T>> {
    try {
      if (!this.#ended) await this.source.return?.();
    } finally {
      this.#end({ kind: "returned" });
    }
    return { done: true, value: value as T };
  }

  #result(result: IteratorResult<T>): IteratorResult<T> {
    if (result.done !== true) return result;
    try {
      this.hooks.beforeDone?.();
    } catch (error) {
      this.#end({ kind: "error", error });
      throw error;
    }
    this.#end({ kind: "done" });
    return result;
  }

  #fail(error: unknown): never {
    const thrown = this.hooks.mapError ? this.hooks.mapError(error) : error;
    this.#end({ kind: "error", error: thrown });
    throw thrown;
  }

  #end(how: StreamEnd): void {
    if (this.#ended) return;
    this.#ended = true;
    this.hooks.onEnd?.(how);
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
