/** Waits for `promise` at most `timeoutMs`; the error names what was awaited (and a server's output). */
export async function withTimeout<T>(
  what: string,
  timeoutMs: number,
  promise: Promise<T>,
  server?: { output(): string },
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}` +
              (server ? `; output:\n${server.output()}` : ""),
          ),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
