import { create, type DescMessage, type DescService, toBinary } from "@bufbuild/protobuf";
import {
  appendHeaders,
  Code,
  ConnectError,
  createContextValues,
  createHandlerContext,
  createServiceImplSpec,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { getAbortSignalReason } from "@connectrpc/connect/protocol";
import { applyInterceptors } from "../grpc/call-pipeline.js";

type AnyUnaryRequest = UnaryRequest<DescMessage, DescMessage>;
type AnyUnaryResponse = UnaryResponse<DescMessage, DescMessage>;
type Next = (req: AnyUnaryRequest) => Promise<AnyUnaryResponse>;

/** Where a server-side request keeps its handler context, for the chain's innermost step. */
const CONTEXT = Symbol("team.inProcessContext");
/** Where a client-side request keeps the call's timeout (the transport's argument). */
const TIMEOUT = Symbol("team.inProcessTimeout");

/** What a finished call's signal aborts with: one shared reason spares an error per call. */
const CALL_ENDED = new ConnectError("the call has ended", Code.Canceled);

export interface InProcessRpcOptions<S extends DescService> {
  service: S;
  impl: ServiceImpl<S>;
  /** The app's interceptor array, the same one its routers and the gRPC fast path run. */
  interceptors: Interceptor[];
  /** The client side's interceptors (teamErrorInterceptor), as the router transport had them. */
  clientInterceptors: Interceptor[];
  /** Streaming calls go here (the router transport): only unary calls take the short way. */
  streams: Transport;
}

/**
 * The service's unary methods called in-process for /mcp's tools: the request handed to the
 * app's interceptor array around the method's implementation, as connect's router transport
 * does, without the Connect protocol in between (serializing the request, a universal
 * handler's request and response, async iterables of bytes, parsing the answer), which was
 * about a fifth of a list_members call's CPU (bench:hostile --cpu-profile). Every
 * interceptor still runs (metrics, error mapping, auth from the `authorization` header,
 * send rate, journal, rules), so a tool's call is refused exactly as an RPC is, and an error
 * reaches the client as connect's would decode it: code, message, details as bytes.
 */
export function inProcessRpcTransport<S extends DescService>(o: InProcessRpcOptions<S>): Transport {
  const spec = createServiceImplSpec(o.service, o.impl);
  // Each method's chain built once (as the gRPC fast path does, grpc-unary.ts): the
  // interceptors keep their state outside the functions they return.
  const chains = new Map<string, Next>();
  for (const method of o.service.methods) {
    const m = spec.methods[method.localName];
    if (m?.kind !== "unary") continue;
    chains.set(
      method.localName,
      applyInterceptors<Next>(async (req) => {
        const context = (req as { [CONTEXT]?: HandlerContext })[CONTEXT] as HandlerContext;
        // connect's mergeRequest: what an interceptor changed on the request wins.
        const message = await m.impl(req.message, {
          ...context,
          requestHeader: req.header,
          signal: req.signal,
          values: req.contextValues,
        });
        return {
          stream: false,
          service: method.parent,
          method,
          header: context.responseHeader,
          trailer: context.responseTrailer,
          message: create(method.output, message),
        } as AnyUnaryResponse;
      }, o.interceptors),
    );
  }
  const client = applyInterceptors<Next>(async (req) => {
    const chain = chains.get(req.method.localName);
    if (!chain) throw new ConnectError(`${req.method.name} is not unary`, Code.Unimplemented);
    return callServer(chain, req, (req as { [TIMEOUT]?: number })[TIMEOUT]);
  }, o.clientInterceptors);
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) =>
      client({
        stream: false,
        service: method.parent,
        method,
        requestMethod: "POST",
        url: `in-process:/${method.parent.typeName}/${method.name}`,
        header: new Headers(header),
        contextValues: contextValues ?? createContextValues(),
        message: create(method.input as DescMessage, input as never),
        signal: signal ?? new AbortController().signal,
        // As connect's transport: a timeout of 0 or less is none.
        [TIMEOUT]: timeoutMs !== undefined && timeoutMs > 0 ? timeoutMs : undefined,
      } as AnyUnaryRequest) as never,
    stream: (...args) => o.streams.stream(...args),
  };
}

/**
 * One call through the server's chain with the handler context connect's unary handler
 * makes (the deadline, the client's signal, fresh context values and response headers),
 * raced against its signal as the router transport's client races its handler.
 */
async function callServer(
  chain: Next,
  req: AnyUnaryRequest,
  timeoutMs: number | undefined,
): Promise<AnyUnaryResponse> {
  const context = createHandlerContext({
    service: req.service,
    method: req.method,
    protocolName: "connect",
    requestMethod: "POST",
    url: req.url,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    requestSignal: req.signal,
    requestHeader: req.header,
    contextValues: createContextValues(),
  });
  const serverReq = {
    stream: false,
    service: req.service,
    method: req.method,
    requestMethod: "POST",
    url: req.url,
    header: context.requestHeader,
    contextValues: context.values,
    signal: context.signal,
    message: req.message,
    [CONTEXT]: context,
  } as AnyUnaryRequest;
  try {
    return await raceSignal(context.signal, chain(serverReq));
  } catch (err) {
    // Cut short by the client's signal or the deadline: the reason, as connect's client
    // raises it (a Canceled for anything that is not already a ConnectError).
    const reason =
      context.signal.aborted && !(err instanceof ConnectError)
        ? ConnectError.from(err, Code.Canceled)
        : err;
    context.abort(err);
    throw asReceived(reason, context);
  } finally {
    context.abort(CALL_ENDED);
  }
}

/**
 * The error as the client end of the Connect protocol decodes it: a ConnectError (anything
 * else is "internal error", as connect's handler answers it), the response's headers and
 * trailers as metadata, details as type names and bytes.
 */
function asReceived(err: unknown, context: HandlerContext): ConnectError {
  const e = err instanceof ConnectError ? err : new ConnectError("internal error", Code.Internal);
  const metadata = appendHeaders(e.metadata, context.responseHeader, context.responseTrailer);
  const received = new ConnectError(e.rawMessage, e.code, metadata);
  received.details = e.details.map((d) =>
    "desc" in d ? { type: d.desc.typeName, value: toBinary(d.desc, create(d.desc, d.value)) } : d,
  );
  return received;
}

function raceSignal<T>(signal: AbortSignal, promise: Promise<T>): Promise<T> {
  if (signal.aborted) return Promise.reject(getAbortSignalReason(signal));
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(getAbortSignalReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => {
    signal.removeEventListener("abort", onAbort);
  });
}
