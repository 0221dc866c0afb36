/**
 * Floor: bare connect-node (the version and patches this project runs), `connectNodeAdapter`
 * on `http2.createServer`, serving TeamService.Send with a trivial handler (an empty
 * SendResponse) and no interceptors: what the library costs per call before any of our code.
 */
import http2 from "node:http2";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { announceListening } from "./listening.js";

const server = http2.createServer(
  connectNodeAdapter({
    routes: (router) => router.rpc(TeamService.method.send, () => ({})),
  }),
);
server.listen(0, "127.0.0.1", () => announceListening(server.address()));
process.once("SIGTERM", () => server.close(() => process.exit(0)));
