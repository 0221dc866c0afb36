import type { ContextValues, Interceptor } from "@connectrpc/connect";
import type { WritePressure } from "../http/write-pressure.js";
import type { Compression } from "./connect-internals.js";

/** What every gRPC call of the service shares: the app's one pipeline and the wire limits. */
export interface CallPipeline {
  /** The same interceptor array connect-node's router runs (app.ts builds it once). */
  interceptors: Interceptor[];
  /** connect's readMaxBytes. */
  readMaxBytes: number;
  /** Encodings accepted and offered, in connect-node's order (gzip, br). */
  acceptCompression: Compression[];
  /** The call's context values, as the connect adapter gives them (cut signal, pressure). */
  contextValues(
    cut: AbortSignal | undefined,
    pressure: WritePressure | undefined,
    /** The client's address (the TCP peer). */
    peer: string | undefined,
  ): ContextValues;
}

/**
 * Wraps `next` in the interceptors, the first outermost, as connect's applyInterceptors
 * (interceptor.ts) does; done once per method (see unaryChain), not per call.
 */
export function applyInterceptors<T>(next: T, interceptors: Interceptor[]): T {
  let wrapped = next as unknown as Parameters<Interceptor>[0];
  for (let i = interceptors.length - 1; i >= 0; i--) {
    wrapped = (interceptors[i] as Interceptor)(wrapped);
  }
  return wrapped as unknown as T;
}
