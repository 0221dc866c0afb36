import net from "node:net";

/**
 * Fails at once when the port is taken. The embedded database takes seconds to start, and
 * the real listen comes after it: without this check a taken port was reported only then.
 * (The listen itself still fails cleanly if the port is taken in between.)
 */
export async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return; // the system picks a free one
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code !== "EADDRINUSE") return reject(err);
      reject(
        Object.assign(
          new Error(
            `port ${port} on ${host} is taken (EADDRINUSE): stop what listens there or set PORT / --port`,
          ),
          { code: "PORT_TAKEN" },
        ),
      );
    });
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}
