import http from "node:http";
import http2 from "node:http2";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { Code } from "@connectrpc/connect";

/**
 * Raw HTTP for hostile-input tests: requests are written byte for byte (no generated client
 * cleans them up) and responses are read and judged here, independently of connect-es.
 *
 * A call ends in one of two ways: an HTTP response arrived (`RawResponse`), or the transport
 * failed before one did (`TransportFailure`: reset, dropped connection, timeout). The second
 * is always a finding.
 */

export interface RawResponse {
  kind: "response";
  httpStatus: number;
  headers: Record<string, string>;
  trailers: Record<string, string>;
  body: Buffer;
  /** The caller stopped reading (a live stream it had seen enough of). */
  stoppedByClient: boolean;
}

export interface TransportFailure {
  kind: "transport-failure";
  reason: string;
}

export type RawOutcome = RawResponse | TransportFailure;

const flatten = (h: http.IncomingHttpHeaders | http2.IncomingHttpHeaders) => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : String(v);
  }
  return out;
};

export interface RawRequest {
  /** e.g. /team.v1.TeamService/Send */
  path: string;
  headers: Record<string, string>;
  body: Uint8Array;
  /** Give up (a transport failure) when no complete response came within this long. */
  timeoutMs: number;
  /**
   * For live streams: stop reading (and cancel) once this says the body so far is enough.
   * The response then counts as arrived, with `stoppedByClient`.
   */
  enough?: (bodySoFar: Buffer) => boolean;
  /** HTTP/1.1 only: send the body chunked (no content-length), as a streaming client would. */
  chunked?: boolean;
  /** HTTP/1.1 only: called when a reused keep-alive connection was reset (then retried). */
  onReusedSocketReset?: () => void;
}

/** One request over HTTP/1.1; `agent` false: a connection of its own, closed afterwards. */
export function h1Request(
  baseUrl: string,
  agent: http.Agent | false,
  r: RawRequest,
): Promise<RawOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: RawOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    const headers: Record<string, string> = { ...r.headers };
    if (!r.chunked) headers["content-length"] = String(r.body.byteLength);
    const req = http.request(`${baseUrl}${r.path}`, { method: "POST", agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      const finish = (stoppedByClient: boolean) =>
        done({
          kind: "response",
          httpStatus: res.statusCode ?? 0,
          headers: flatten(res.headers),
          trailers: flatten(res.trailers),
          body: Buffer.concat(chunks),
          stoppedByClient,
        });
      res.on("data", (c: Buffer) => {
        chunks.push(c);
        if (r.enough?.(Buffer.concat(chunks))) {
          finish(true);
          req.destroy();
        }
      });
      res.on("end", () => finish(false));
      res.on("error", (e) => done({ kind: "transport-failure", reason: `response: ${e.message}` }));
      res.on("aborted", () => done({ kind: "transport-failure", reason: "response aborted" }));
    });
    const timer = setTimeout(() => {
      done({ kind: "transport-failure", reason: `no complete response in ${r.timeoutMs} ms` });
      req.destroy();
    }, r.timeoutMs);
    req.on("error", (e) => {
      // The server may answer (e.g. 429 for an oversized body) and close before the whole
      // body is written: a write error after the response arrived is not a failure.
      if (settled) return;
      // A keep-alive connection the server closed (idle timeout) just as this request was
      // put on it: the race Node's documentation says to retry (http.ClientRequest
      // reusedSocket). Retried once on a connection of its own, and counted.
      if (req.reusedSocket && (e as NodeJS.ErrnoException).code === "ECONNRESET" && agent) {
        settled = true;
        clearTimeout(timer);
        r.onReusedSocketReset?.();
        resolve(h1Request(baseUrl, false, r));
        return;
      }
      done({ kind: "transport-failure", reason: `request: ${(e as Error).message}` });
    });
    if (r.chunked) {
      // A few chunks, so the server sees a body of unknown length arrive over time.
      const step = Math.max(1, Math.ceil(r.body.byteLength / 4));
      for (let i = 0; i < r.body.byteLength; i += step) req.write(r.body.subarray(i, i + step));
      req.end();
    } else {
      req.end(r.body);
    }
  });
}

/**
 * HTTP/2 (prior knowledge) on one session, re-opened if it closes. A session that dies while
 * a request is on it is a transport failure of that request.
 */
export class H2Client {
  private session: http2.ClientHttp2Session | undefined;
  /** Sessions that ended with an error or a GOAWAY we did not ask for. */
  readonly sessionErrors: string[] = [];

  constructor(private readonly baseUrl: string) {}

  private open(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const s = http2.connect(this.baseUrl);
    s.on("error", (e) => this.sessionErrors.push(`session error: ${e.message}`));
    s.on("goaway", (code) => {
      if (code !== http2.constants.NGHTTP2_NO_ERROR) this.sessionErrors.push(`goaway ${code}`);
    });
    s.unref();
    this.session = s;
    return s;
  }

  request(r: RawRequest): Promise<RawOutcome> {
    return new Promise((resolve) => {
      let settled = false;
      let stream: http2.ClientHttp2Stream | undefined;
      const done = (o: RawOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(o);
      };
      const timer = setTimeout(() => {
        done({ kind: "transport-failure", reason: `no complete response in ${r.timeoutMs} ms` });
        stream?.close(http2.constants.NGHTTP2_CANCEL);
      }, r.timeoutMs);
      try {
        stream = this.open().request({
          ":method": "POST",
          ":path": r.path,
          ...r.headers,
        });
      } catch (e) {
        done({ kind: "transport-failure", reason: `cannot open stream: ${(e as Error).message}` });
        return;
      }
      const s = stream;
      let headers: Record<string, string> | undefined;
      let trailers: Record<string, string> = {};
      const chunks: Buffer[] = [];
      const finish = (stoppedByClient: boolean) => {
        if (!headers) {
          done({ kind: "transport-failure", reason: "stream ended without response headers" });
          return;
        }
        done({
          kind: "response",
          httpStatus: Number(headers[":status"] ?? 0),
          headers,
          trailers,
          body: Buffer.concat(chunks),
          stoppedByClient,
        });
      };
      s.on("response", (h) => {
        headers = flatten(h);
      });
      s.on("trailers", (t) => {
        trailers = flatten(t);
      });
      s.on("data", (c: Buffer) => {
        chunks.push(c);
        if (r.enough?.(Buffer.concat(chunks))) {
          finish(true);
          s.close(http2.constants.NGHTTP2_CANCEL);
        }
      });
      s.on("end", () => {
        finish(false);
        // The server may answer before reading the whole body (an oversized message): stop
        // sending, as a real client does. Only then: a reset after every call would trip
        // the server's rapid-reset protection (nghttp2: GOAWAY INTERNAL_ERROR after ~1000).
        if (!s.closed && !s.writableFinished) s.close(http2.constants.NGHTTP2_CANCEL);
      });
      s.on("close", () => {
        // A stream reset by the server before it finished answering: that is a dropped call.
        // (Reset after the end of the response, e.g. while we were still sending an oversized
        // body, is fine: the response is complete.)
        if (!settled) {
          const code = s.rstCode ?? -1;
          if (headers && code === http2.constants.NGHTTP2_NO_ERROR) finish(false);
          else done({ kind: "transport-failure", reason: `stream closed, rst code ${code}` });
        }
      });
      s.on("error", (e) => {
        if (!settled) done({ kind: "transport-failure", reason: `stream: ${e.message}` });
      });
      s.end(Buffer.from(r.body));
    });
  }

  close(): void {
    this.session?.close();
    this.session = undefined;
  }
}

// ---------------------------------------------------------------------------------------
// Framing: the 5-byte envelope of gRPC and Connect streaming (flags, big-endian length).

export function envelope(flags: number, data: Uint8Array, lyingLength?: number): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(flags & 0xff, 0);
  head.writeUInt32BE((lyingLength ?? data.byteLength) >>> 0, 1);
  return Buffer.concat([head, Buffer.from(data)]);
}

export interface Frame {
  flags: number;
  data: Buffer;
}

/** Splits a body into envelopes; `rest` is a trailing incomplete envelope, if any. */
export function splitFrames(body: Buffer): { frames: Frame[]; rest: number } {
  const frames: Frame[] = [];
  let at = 0;
  while (body.length - at >= 5) {
    const len = body.readUInt32BE(at + 1);
    if (body.length - at - 5 < len) break;
    frames.push({ flags: body.readUInt8(at), data: body.subarray(at + 5, at + 5 + len) });
    at += 5 + len;
  }
  return { frames, rest: body.length - at };
}

/** Whether a streamed body holds at least one complete envelope (enough of a live stream). */
export const hasCompleteFrame = (body: Buffer) => splitFrames(body).frames.length > 0;

/** Decompresses what the server compressed (it answers in the encoding the request used). */
function inflate(data: Buffer, encoding: string | undefined): Buffer | undefined {
  try {
    if (encoding === "gzip") return gunzipSync(data);
    if (encoding === "br") return brotliDecompressSync(data);
    return encoding === undefined || encoding === "identity" ? data : undefined;
  } catch {
    return undefined;
  }
}

/** The frames of a body, compressed ones (flag 1) inflated; undefined if one cannot be. */
function inflatedFrames(body: Buffer, encoding: string | undefined) {
  const { frames, rest } = splitFrames(body);
  const out: Frame[] = [];
  for (const f of frames) {
    if ((f.flags & 1) === 0) out.push(f);
    else {
      const data = inflate(f.data, encoding);
      if (data === undefined) return { frames: undefined, rest };
      out.push({ flags: f.flags & ~1, data });
    }
  }
  return { frames: out, rest };
}

// ---------------------------------------------------------------------------------------
// Verdicts: what a response says, judged by the protocol's own rules.

/** Connect's wire name of a code: InvalidArgument -> "invalid_argument". */
export const codeName = (code: Code): string =>
  (Code[code] ?? String(code)).replace(
    /[A-Z]/g,
    (c, i: number) => `${i ? "_" : ""}${c.toLowerCase()}`,
  );

const codeByName = new Map<string, Code>();
for (const value of Object.values(Code)) {
  if (typeof value === "number") codeByName.set(codeName(value), value);
}

export type Verdict =
  /** A success: the response message(s), still encoded. */
  | { kind: "success"; messages: Buffer[]; binary: boolean }
  /** A well-formed error with a code (and its message). */
  | { kind: "error"; code: Code; message: string }
  /** An HTTP-level refusal without a Connect body (415 for an unsupported content type). */
  | { kind: "http"; status: number }
  /** A response that follows no protocol: always a finding. */
  | { kind: "malformed"; why: string };

/** Connect unary: 200 with the message, or an error status with a JSON error body. */
export function judgeConnectUnary(res: RawResponse): Verdict {
  const ct = res.headers["content-type"] ?? "";
  const body = inflate(res.body, res.headers["content-encoding"]);
  if (body === undefined) {
    return {
      kind: "malformed",
      why: `body not in its content-encoding ${res.headers["content-encoding"]}`,
    };
  }
  if (res.httpStatus === 200) {
    if (/^application\/(json|proto)/.test(ct)) {
      return { kind: "success", messages: [body], binary: ct.startsWith("application/proto") };
    }
    return { kind: "malformed", why: `200 with content-type ${JSON.stringify(ct)}` };
  }
  if (body.length === 0) return { kind: "http", status: res.httpStatus };
  if (!ct.startsWith("application/json")) {
    return { kind: "malformed", why: `error ${res.httpStatus} with content-type ${ct}` };
  }
  return connectErrorJson(body.toString("utf8"), `HTTP ${res.httpStatus}`);
}

function connectErrorJson(text: string, where: string): Verdict {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { kind: "malformed", why: `${where}: error body is not JSON: ${text.slice(0, 200)}` };
  }
  const { code, message } = (parsed ?? {}) as { code?: unknown; message?: unknown };
  const known = typeof code === "string" ? codeByName.get(code) : undefined;
  if (known === undefined) {
    return { kind: "malformed", why: `${where}: unknown error code ${JSON.stringify(code)}` };
  }
  return { kind: "error", code: known, message: typeof message === "string" ? message : "" };
}

/** gRPC: 200, application/grpc*, grpc-status in the trailers (or a trailers-only response). */
export function judgeGrpc(res: RawResponse): Verdict {
  const ct = res.headers["content-type"] ?? "";
  if (res.httpStatus !== 200) {
    return res.body.length === 0 || res.httpStatus === 415
      ? { kind: "http", status: res.httpStatus }
      : { kind: "malformed", why: `gRPC answered HTTP ${res.httpStatus}` };
  }
  if (!ct.startsWith("application/grpc")) {
    return { kind: "malformed", why: `gRPC response with content-type ${ct}` };
  }
  const { frames, rest } = inflatedFrames(res.body, res.headers["grpc-encoding"]);
  if (frames === undefined) return { kind: "malformed", why: "a frame not in grpc-encoding" };
  const statusText = res.trailers["grpc-status"] ?? res.headers["grpc-status"];
  if (statusText === undefined) {
    if (res.stoppedByClient && frames.length > 0) {
      return { kind: "success", messages: frames.map((f) => f.data), binary: !/json/.test(ct) };
    }
    return { kind: "malformed", why: "gRPC response without grpc-status" };
  }
  const code = Number(statusText);
  if (!Number.isInteger(code) || code < 0 || code > 16) {
    return { kind: "malformed", why: `grpc-status ${JSON.stringify(statusText)}` };
  }
  if (rest !== 0) return { kind: "malformed", why: "gRPC body ends inside an envelope" };
  if (code === 0) {
    return { kind: "success", messages: frames.map((f) => f.data), binary: !/json/.test(ct) };
  }
  const raw = res.trailers["grpc-message"] ?? res.headers["grpc-message"] ?? "";
  let message = raw;
  try {
    message = decodeURIComponent(raw);
  } catch {
    // Left percent-encoded.
  }
  return { kind: "error", code: code as Code, message };
}

/** Connect streaming: 200, envelopes, then an end-stream envelope (flag 2) with JSON. */
export function judgeConnectStream(res: RawResponse): Verdict {
  const ct = res.headers["content-type"] ?? "";
  if (res.httpStatus !== 200) {
    if (res.body.length === 0) return { kind: "http", status: res.httpStatus };
    // Errors before the stream starts (e.g. unsupported content type) may come as unary JSON.
    return ct.startsWith("application/json")
      ? connectErrorJson(res.body.toString("utf8"), `HTTP ${res.httpStatus}`)
      : { kind: "malformed", why: `stream answered HTTP ${res.httpStatus} with ${ct}` };
  }
  if (!/^application\/connect\+(json|proto)/.test(ct)) {
    return { kind: "malformed", why: `stream response with content-type ${ct}` };
  }
  const binary = ct.startsWith("application/connect+proto");
  const { frames, rest } = inflatedFrames(res.body, res.headers["connect-content-encoding"]);
  if (frames === undefined) {
    return { kind: "malformed", why: "a frame not in connect-content-encoding" };
  }
  const end = frames.find((f) => (f.flags & 0b10) !== 0);
  const messages = frames.filter((f) => (f.flags & 0b10) === 0).map((f) => f.data);
  if (!end) {
    if (res.stoppedByClient && messages.length > 0) return { kind: "success", messages, binary };
    return { kind: "malformed", why: "stream ended without an end-stream envelope" };
  }
  if (rest !== 0) return { kind: "malformed", why: "stream body ends inside an envelope" };
  let parsed: { error?: { code?: unknown; message?: unknown } };
  try {
    parsed = JSON.parse(end.data.toString("utf8"));
  } catch {
    return { kind: "malformed", why: "end-stream envelope is not JSON" };
  }
  if (parsed.error === undefined) return { kind: "success", messages, binary };
  return connectErrorJson(JSON.stringify(parsed.error), "end-stream");
}

/** gRPC-Web: 200, data envelopes, then a trailer envelope (flag 0x80), or trailers-only. */
export function judgeGrpcWeb(res: RawResponse): Verdict {
  const ct = res.headers["content-type"] ?? "";
  if (res.httpStatus !== 200) {
    return res.body.length === 0 || res.httpStatus === 415
      ? { kind: "http", status: res.httpStatus }
      : { kind: "malformed", why: `gRPC-Web answered HTTP ${res.httpStatus}` };
  }
  if (!ct.startsWith("application/grpc-web")) {
    return { kind: "malformed", why: `gRPC-Web response with content-type ${ct}` };
  }
  const binary = !/json/.test(ct);
  const { frames, rest } = inflatedFrames(res.body, res.headers["grpc-encoding"]);
  if (frames === undefined) return { kind: "malformed", why: "a frame not in grpc-encoding" };
  const trailerFrame = frames.find((f) => (f.flags & 0x80) !== 0);
  const messages = frames.filter((f) => (f.flags & 0x80) === 0).map((f) => f.data);
  const trailers: Record<string, string> = {};
  if (trailerFrame) {
    for (const line of trailerFrame.data.toString("latin1").split("\r\n")) {
      const i = line.indexOf(":");
      if (i > 0) trailers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
  }
  const statusText = trailers["grpc-status"] ?? res.headers["grpc-status"];
  if (statusText === undefined) {
    if (res.stoppedByClient && messages.length > 0) return { kind: "success", messages, binary };
    return { kind: "malformed", why: "gRPC-Web response without grpc-status" };
  }
  if (rest !== 0) return { kind: "malformed", why: "gRPC-Web body ends inside an envelope" };
  const code = Number(statusText);
  if (!Number.isInteger(code) || code < 0 || code > 16) {
    return { kind: "malformed", why: `grpc-status ${JSON.stringify(statusText)}` };
  }
  if (code === 0) return { kind: "success", messages, binary };
  const raw = trailers["grpc-message"] ?? res.headers["grpc-message"] ?? "";
  let message = raw;
  try {
    message = decodeURIComponent(raw);
  } catch {
    // Left percent-encoded.
  }
  return { kind: "error", code: code as Code, message };
}
