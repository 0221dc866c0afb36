/**
 * Floor: a bare `@grpc/grpc-js` server serving TeamService.Send with a trivial handler (an
 * empty SendResponse). The request is decoded with protobuf-es, as connect-node and our
 * server decode it, so the floors differ by their RPC stack only.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import {
  type SendRequest,
  SendRequestSchema,
  type SendResponse,
  SendResponseSchema,
} from "../../gen/team/v1/team_service_pb.js";
import { LISTENING_EVENT } from "./listening.js";

const sendMethod: grpc.MethodDefinition<SendRequest, SendResponse> = {
  path: "/team.v1.TeamService/Send",
  requestStream: false,
  responseStream: false,
  requestSerialize: (m) => Buffer.from(toBinary(SendRequestSchema, m)),
  requestDeserialize: (b) => fromBinary(SendRequestSchema, b),
  responseSerialize: (m) => Buffer.from(toBinary(SendResponseSchema, m)),
  responseDeserialize: (b) => fromBinary(SendResponseSchema, b),
};

const server = new grpc.Server();
server.addService(
  { send: sendMethod },
  {
    send: (_call: unknown, callback: grpc.sendUnaryData<SendResponse>) =>
      callback(null, create(SendResponseSchema)),
  },
);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  process.stdout.write(`${JSON.stringify({ event: LISTENING_EVENT, port })}\n`);
});
process.once("SIGTERM", () => server.tryShutdown(() => process.exit(0)));
