import type http2 from "node:http2";
import type { DescService } from "@bufbuild/protobuf";
import { createServiceImplSpec, type ServiceImpl } from "@connectrpc/connect";
import type { RawStreams } from "../http/http-server.js";
import { finishUnreadStreamBody } from "../http/oversized-request-bodies.js";
import type { Logger } from "../logger.js";
import type { CallPipeline } from "./call-pipeline.js";
import { createMethodSerializationLookup, parseContentType } from "./connect-internals.js";
import type { GrpcMethod } from "./grpc-method.js";
import {
  type ServerStreamChain,
  serverStreamChain,
  serveServerStream,
} from "./grpc-server-stream.js";
import { serveUnary, type UnaryChain, unaryChain } from "./grpc-unary.js";

/** A method as served here: unary or server streaming, its interceptor chain built once. */
type ServedMethod =
  | (GrpcMethod & { kind: "unary"; chain: UnaryChain })
  | (GrpcMethod & { kind: "server_streaming"; chain: ServerStreamChain });

export interface GrpcCallsOptions<S extends DescService> {
  service: S;
  /** The same implementation object connect-node's router serves (app.ts). */
  impl: Partial<ServiceImpl<S>>;
  pipeline: CallPipeline;
  logger: Logger;
}

/**
 * gRPC calls of one service served on the bare HTTP/2 stream: every unary and
 * server-streaming method the service's descriptor has (a method added to the proto is
 * served without a line here), through the app's one call pipeline. A stream is taken when it is a POST to a method of
 * the service with a gRPC content type (application/grpc, +proto, +json); everything else
 * (Connect, gRPC-Web, other services such as health and reflection) goes to connect-node.
 * A path under the service that names no method is answered 404 here, as connect-node's
 * fallback does, without building Node's compatibility objects for it.
 */
export function createGrpcCalls<S extends DescService>(options: GrpcCallsOptions<S>): RawStreams {
  const { pipeline, logger } = options;
  const spec = createServiceImplSpec(options.service, options.impl);
  const served = new Map<string, { proto: ServedMethod; json: ServedMethod }>();
  for (const methodSpec of Object.values(spec.methods)) {
    const serialization = createMethodSerializationLookup(methodSpec.method, undefined, undefined, {
      readMaxBytes: pipeline.readMaxBytes,
      writeMaxBytes: 0xffffffff,
    });
    let chained: Pick<ServedMethod, "kind" | "chain">;
    if (methodSpec.kind === "unary") {
      chained = { kind: "unary", chain: unaryChain(methodSpec, pipeline.interceptors) };
    } else if (methodSpec.kind === "server_streaming") {
      chained = {
        kind: "server_streaming",
        chain: serverStreamChain(methodSpec, pipeline.interceptors),
      };
    } else {
      continue; // Client and bidi streams (none in this service) are left to connect-node.
    }
    const method = (binary: boolean) =>
      ({ spec: methodSpec, serialization, binary, ...chained }) as ServedMethod;
    served.set(`/${options.service.typeName}/${methodSpec.method.name}`, {
      proto: method(true),
      json: method(false),
    });
  }
  const servicePrefix = `/${options.service.typeName}/`;
  const methodPaths = new Set(options.service.methods.map((m) => `${servicePrefix}${m.name}`));
  /** Served here: the methods above, and paths that name no method. */
  const servedHere = (path: string) => served.has(path) || !methodPaths.has(path);
  const escaped = (stream: http2.ServerHttp2Stream, path: string, err: unknown) => {
    // Every call answers its own errors; what escapes is a bug: logged, the stream reset,
    // the process kept.
    logger.error({ event: "rpc_error", path, err }, "gRPC call handler failed");
    stream.destroy();
  };
  return {
    accepts(headers) {
      if (headers[":method"] !== "POST") return false;
      const path = headers[":path"];
      if (path === undefined || !path.startsWith(servicePrefix) || !servedHere(path)) {
        return false;
      }
      return parseContentType(headers["content-type"] ?? null) !== undefined;
    },
    serve(stream, headers, guard) {
      const path = headers[":path"] as string;
      const method = served.get(path);
      if (!method) {
        // No such method (accepts() leaves the others to connect-node): what connect-node's
        // fallback answers, and the body read and dropped.
        if (stream.destroyed || stream.closed) return;
        stream.respond({ ":status": 404 }, { endStream: true });
        finishUnreadStreamBody(stream);
        return;
      }
      const type = parseContentType(headers["content-type"] ?? null);
      const chosen = type?.binary ? method.proto : method.json;
      if (chosen.kind === "unary") {
        serveUnary(stream, headers, chosen, pipeline).catch((err: unknown) =>
          escaped(stream, path, err),
        );
        return;
      }
      // Only a stream's answer is written with write(), which the slow-consumer guard watches.
      // A stream reports what escapes itself (no reaction per stream waiting on its end).
      try {
        serveServerStream(stream, headers, guard(), chosen, pipeline, escaped);
      } catch (err) {
        escaped(stream, path, err);
      }
    },
  };
}
