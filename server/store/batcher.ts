/**
 * Groups concurrent calls of one kind into shared database round trips. A call that
 * arrives while nothing is in flight goes at once, alone, so an idle server adds no
 * latency. Calls that arrive while `maxInFlight` batches are running wait for the next one;
 * under load the batches grow by themselves, up to `maxBatch`. Each call settles with its
 * own result (or its own error) only once its batch has finished.
 */
export function createBatcher<In, Out>(
  run: (inputs: In[]) => Promise<(Out | Error)[]>,
  limits: { maxBatch: number; maxInFlight: number },
): (input: In) => Promise<Out> {
  let queue: { input: In; resolve: (out: Out) => void; reject: (err: unknown) => void }[] = [];
  let inFlight = 0;

  const pump = () => {
    while (inFlight < limits.maxInFlight && queue.length > 0) {
      const batch = queue.slice(0, limits.maxBatch);
      queue = queue.slice(batch.length);
      inFlight++;
      run(batch.map((b) => b.input))
        .then(
          (results) => {
            batch.forEach((call, i) => {
              const r = results[i] as Out | Error;
              if (r instanceof Error) call.reject(r);
              else call.resolve(r);
            });
          },
          (err) => {
            for (const call of batch) call.reject(err);
          },
        )
        .finally(() => {
          inFlight--;
          pump();
        });
    }
  };

  return (input) =>
    new Promise((resolve, reject) => {
      queue.push({ input, resolve, reject });
      pump();
    });
}
