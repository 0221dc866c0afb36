import type { Database, Transaction } from "./database.js";

/** Thrown into a producer whose consumer stopped reading: ends (rolls back) its transaction. */
class ConsumerGone extends Error {}

/**
 * Pages a transaction produces, as an async iterable: `produce` runs inside one
 * transaction and hands each page to `emit`, which resolves once the consumer has taken it
 * (one page read ahead at most), so memory holds about two pages however much the
 * transaction reads. A consumer that stops early (a client gone) ends the transaction: the
 * next `emit` throws and it rolls back.
 */
export async function* pagesOf<T>(
  db: Database,
  produce: (tx: Transaction, emit: (page: T) => Promise<void>) => Promise<void>,
): AsyncGenerator<T> {
  const queue: T[] = [];
  let finished = false;
  let failure: unknown;
  let stopped = false;
  let wakeConsumer = () => {};
  let wakeProducer = () => {};
  const emit = async (page: T) => {
    if (stopped) throw new ConsumerGone();
    queue.push(page);
    wakeConsumer();
    while (queue.length > 0 && !stopped) {
      await new Promise<void>((resolve) => {
        wakeProducer = resolve;
      });
    }
    if (stopped) throw new ConsumerGone();
  };
  const run = db
    .transaction((tx) => produce(tx, emit))
    .then(
      () => {
        finished = true;
        wakeConsumer();
      },
      (err: unknown) => {
        failure = err;
        finished = true;
        wakeConsumer();
      },
    );
  try {
    for (;;) {
      if (queue.length > 0) {
        const page = queue.shift() as T;
        wakeProducer();
        yield page;
        continue;
      }
      if (finished) {
        if (failure !== undefined && !(failure instanceof ConsumerGone)) throw failure;
        return;
      }
      await new Promise<void>((resolve) => {
        wakeConsumer = resolve;
      });
    }
  } finally {
    stopped = true;
    wakeProducer();
    await run;
  }
}
