import { type CallOptions, type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { TeamService } from "../gen/team/v1/team_service_pb.js";

export type TeamClient = Client<typeof TeamService>;

/**
 * A fixed number of HTTP/2 connections to the server, each with a gRPC client. Calls are
 * spread over them by index, as a fleet of agents would be: many streams multiplexed on a
 * few connections. Who calls is per call (the bearer token), not per connection.
 */
export class Connections {
  private readonly managers: Http2SessionManager[];
  private readonly clients: TeamClient[];

  constructor(baseUrl: string, count: number) {
    this.managers = Array.from({ length: count }, () => new Http2SessionManager(baseUrl));
    this.clients = this.managers.map((sessionManager) =>
      createClient(TeamService, createGrpcTransport({ baseUrl, sessionManager })),
    );
  }

  get size(): number {
    return this.clients.length;
  }

  /** The client of connection `i mod size`. */
  client(i: number): TeamClient {
    return this.clients[i % this.clients.length] as TeamClient;
  }

  /** Opens every connection now, so that connecting is not part of what is measured. */
  async open(): Promise<void> {
    const states = await Promise.all(this.managers.map((m) => m.connect()));
    const failed = states.indexOf("error");
    if (failed >= 0) {
      throw new Error(`HTTP/2 connection failed: ${String(this.managers[failed]?.error())}`);
    }
  }

  /** Closes every connection (streams still open on them end). */
  close(): void {
    for (const m of this.managers) m.abort();
  }
}

/** Call options that authenticate as the member holding `token`. */
export function as(token: string, extra: CallOptions = {}): CallOptions {
  return { ...extra, headers: { authorization: `Bearer ${token}` } };
}
