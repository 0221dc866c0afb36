import type { AddressInfo } from "node:net";

/**
 * The line a floor server prints once it listens: bench/floor-process.ts reads the port from
 * it, so the port is chosen by the kernel (port 0) and never raced for.
 */
export const LISTENING_EVENT = "floor_listening";

export function announceListening(address: AddressInfo | string | null): void {
  if (address === null || typeof address === "string") throw new Error("not a TCP address");
  process.stdout.write(`${JSON.stringify({ event: LISTENING_EVENT, port: address.port })}\n`);
}
