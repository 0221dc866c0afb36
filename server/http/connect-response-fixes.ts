import type http from "node:http";
import type http2 from "node:http2";
import { capGrpcMessage } from "./grpc-message-cap.js";
import { capGrpcWebMessage } from "./oversized-grpc-web-message.js";
import { reportParseErrorsAsInvalidArgument } from "./parse-error-codes.js";

/**
 * What connect-node's responses need on their way out: refusals that quote the client's
 * input are capped (a huge grpc-message broke connections), and bodies that cannot be
 * decoded are InvalidArgument, not Internal. Applied to calls connect-node serves only; the
 * gRPC Subscribe fast path writes bounded statuses of its own.
 */
export function fixConnectResponses(res: http.ServerResponse | http2.Http2ServerResponse): void {
  capGrpcMessage(res);
  capGrpcWebMessage(res);
  reportParseErrorsAsInvalidArgument(res);
}
