/**
 * Floor: raw `node:http2` answering every stream with a fixed gRPC response (an empty
 * message, grpc-status 0), the request read and ignored. What an HTTP/2 exchange costs Node
 * on this machine, with no gRPC library at all: the ceiling of any server in Node.
 */
import http2 from "node:http2";
import { announceListening } from "./listening.js";

// An empty message: compressed flag 0, length 0.
const EMPTY_MESSAGE = Buffer.alloc(5);
const HEADERS = { ":status": 200, "content-type": "application/grpc" };
const TRAILERS = { "grpc-status": "0" };

const server = http2.createServer();
server.on("stream", (stream) => {
  stream.on("error", () => {}); // a reset by the load generator at its end is not news
  stream.resume();
  stream.on("end", () => {
    if (stream.destroyed) return;
    stream.respond(HEADERS, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers(TRAILERS));
    stream.end(EMPTY_MESSAGE);
  });
});
server.listen(0, "127.0.0.1", () => announceListening(server.address()));
process.once("SIGTERM", () => server.close(() => process.exit(0)));
