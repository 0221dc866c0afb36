import { createContextKey } from "@connectrpc/connect";

/**
 * Tells a streaming handler when its response stops being written out: a write the stream
 * did not accept at once (over HTTP/2, the client's flow-control window is used up or the
 * socket is full), so the writer now waits for 'drain'. A subscription then lets go of the
 * rest of the page it read (handlers/subscribe.ts), so that a client that stops reading
 * holds no more of the server's memory than the stream's own write buffer.
 */
export interface WritePressure {
  /** Calls `listener` at each write that was not accepted at once; returns the unsubscribe. */
  onBlocked(listener: () => void): () => void;
}

/** The writer's side: `blocked()` after a write returned false. */
export interface WritePressureSource extends WritePressure {
  blocked(): void;
}

export function createWritePressure(): WritePressureSource {
  return new Pressure();
}

/** A class, not an object of closures: every open stream has one for as long as it is open. */
class Pressure implements WritePressureSource {
  // Made on the first listener: every call gets a pressure, few calls stream.
  #listeners: Set<() => void> | undefined;

  onBlocked(listener: () => void): () => void {
    this.#listeners ??= new Set();
    const listeners = this.#listeners;
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  blocked(): void {
    const listeners = this.#listeners;
    if (listeners) for (const listener of [...listeners]) listener();
  }
}

/** The response's write pressure, for handlers served through connect-node. */
export const writePressureKey = createContextKey<WritePressure | undefined>(undefined, {
  description: "tells a streaming handler when its response writes are not accepted",
});
