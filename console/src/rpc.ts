import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { TeamService } from "@team-protocols/contract/team/v1/team_service_pb.js";

export type TeamRpc = Client<typeof TeamService>;

/**
 * The generated TeamService client over the Connect protocol (JSON), to the server that
 * served this page. The token goes in the Authorization header of each call, and only there:
 * fetch sends no cookies (`credentials: "omit"`), so nothing but this header says who calls.
 */
export function createTeamRpc(token: string, baseUrl = window.location.origin): TeamRpc {
  const transport = createConnectTransport({
    baseUrl,
    fetch: (input, init) => fetch(input, { ...init, credentials: "omit" }),
    interceptors: [
      (next) => (req) => {
        req.header.set("authorization", `Bearer ${token}`);
        return next(req);
      },
    ],
  });
  return createClient(TeamService, transport);
}
