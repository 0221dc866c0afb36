import type { Interceptor, Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { teamErrorInterceptor } from "./team-error.js";

/** The wire protocols the server speaks on its one port. */
export type Protocol = "connect" | "grpc" | "grpc-web";
export const protocols: readonly Protocol[] = ["connect", "grpc", "grpc-web"];

export interface TransportOptions {
  /** The server, e.g. "http://127.0.0.1:8080". */
  baseUrl: string;
  /** A member's token (or the admin token, for CreateTeam); sent as `Authorization: Bearer`. */
  token?: string | undefined;
  /** Default "connect". */
  protocol?: Protocol | undefined;
  /**
   * What kind of client this is, sent as the `team-client` header: "mcp" for the MCP bridge,
   * "hook" for runtime and git hooks. The server's presence says the member was last seen
   * through it (Member.last_seen_via); unset, a plain call.
   */
  clientKind?: ClientKind | undefined;
}

/** The `team-client` header's values (the server reads anything else as a plain call). */
export type ClientKind = "mcp" | "hook";
export const TEAM_CLIENT_HEADER = "team-client";

/**
 * A transport that authenticates every call and raises TeamErrors. Connect and gRPC run over
 * HTTP/2 (one connection multiplexes the inbox stream and the calls); gRPC-Web over HTTP/1.1,
 * as a browser proxy would.
 */
export function createTeamTransport(options: TransportOptions): Transport {
  const { baseUrl, token } = options;
  const interceptors: Interceptor[] = [teamErrorInterceptor];
  const kind = options.clientKind;
  if (kind !== undefined) {
    interceptors.push((next) => (req) => {
      req.header.set(TEAM_CLIENT_HEADER, kind);
      return next(req);
    });
  }
  if (token !== undefined && token !== "") {
    interceptors.push((next) => (req) => {
      req.header.set("authorization", `Bearer ${token}`);
      return next(req);
    });
  }
  switch (options.protocol ?? "connect") {
    case "connect":
      return createConnectTransport({ baseUrl, httpVersion: "2", interceptors });
    case "grpc":
      return createGrpcTransport({ baseUrl, interceptors });
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors });
    default:
      throw new Error(`unknown protocol "${options.protocol}": use ${protocols.join(", ")}`);
  }
}
