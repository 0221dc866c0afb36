import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { describeEachDatabase } from "../support/harness.js";
import {
  envelope,
  H2Client,
  h1Request,
  judgeConnectStream,
  judgeConnectUnary,
  judgeGrpc,
  judgeGrpcWeb,
  type RawOutcome,
  type RawRequest,
  type Verdict,
} from "../support/raw-rpc.js";

/**
 * Refusals that quote the client's input are capped before connect serializes and
 * compresses them (issue 15 item 4; the cap is in connect-es itself, by
 * patches/@connectrpc+connect+2.1.2.patch, protocol/wire-message.js). A 1 MiB bad value
 * used to come back as a 1 MiB Connect error (compressed with br: 154 ms of CPU per call),
 * and as a gRPC-Web trailer frame that was left uncapped once compressed.
 *
 * Each call sends a value the parser quotes in its error: a JSON field of 1 MiB (protobuf-es
 * quotes it whole), or for Connect proto, whose binary parse errors quote nothing, a 12 KB
 * connect-timeout-ms header (parseTimeout quotes it). Unary calls need no token (their
 * request is parsed before any interceptor runs); a stream's messages are read after
 * authentication, so Subscribe carries the lead's.
 */

/** connect-es's cap (wire-message.js), and what it appends when it cuts. */
const CAP = 1024;
const CUT = "\u2026 (truncated)";
/** What a capped error may take on the wire, framing, code and JSON keys included. */
const MAX_ERROR_BYTES = 2 * CAP;

const ACK = `/${TeamService.typeName}/${TeamService.method.ack.name}`;
const SUBSCRIBE = `/${TeamService.typeName}/${TeamService.method.subscribe.name}`;
const hugeSeq = Buffer.from(JSON.stringify({ seq: "h".repeat(1_000_000) }));
const hugeAfterSeq = Buffer.from(JSON.stringify({ afterSeq: "h".repeat(1_000_000) }));
const hugeTimeout = `${"9".repeat(12_000)}x`;
/** The head of the parse error: it names the field. */
const namesSeq = /^cannot decode field team\.v1\.AckRequest\.seq from JSON: [^h]*hhhh/;
const namesAfterSeq =
  /^cannot decode field team\.v1\.SubscribeRequest\.after_seq from JSON: [^h]*hhhh/;
const namesTimeout = /^protocol error: invalid connect timeout value: 9999/;

type Compression = "identity" | "gzip" | "br";

interface EchoCase {
  title: string;
  over: "h1" | "h2";
  /** The request; `token` is a team lead's (only a stream needs one). */
  request: (token: string) => RawRequest;
  judge: (o: RawOutcome & { kind: "response" }) => Verdict;
  names: RegExp;
  /** The response header that says the body (or its frames) are compressed. */
  encodingHeader?: string;
  compression: Compression;
}

const req = (path: string, headers: Record<string, string>, body: Buffer): RawRequest => ({
  path,
  headers,
  body,
  timeoutMs: 20_000,
});

function cases(): EchoCase[] {
  const out: EchoCase[] = [];
  for (const compression of ["identity", "gzip", "br"] as const) {
    const accept = compression === "identity" ? {} : { "accept-encoding": compression };
    for (const over of ["h1", "h2"] as const) {
      out.push({
        title: `Connect JSON unary over ${over}, accept-encoding ${compression}`,
        over,
        request: () => req(ACK, { "content-type": "application/json", ...accept }, hugeSeq),
        judge: judgeConnectUnary,
        names: namesSeq,
        encodingHeader: "content-encoding",
        compression,
      });
      out.push({
        title: `Connect proto unary over ${over}, accept-encoding ${compression}`,
        over,
        request: () =>
          req(
            ACK,
            { "content-type": "application/proto", "connect-timeout-ms": hugeTimeout, ...accept },
            Buffer.alloc(0),
          ),
        judge: judgeConnectUnary,
        names: namesTimeout,
        encodingHeader: "content-encoding",
        compression,
      });
    }
    const streamAccept =
      compression === "identity" ? {} : { "connect-accept-encoding": compression };
    out.push({
      title: `Connect JSON stream (end-stream message), connect-accept-encoding ${compression}`,
      over: "h1",
      request: (token) =>
        req(
          SUBSCRIBE,
          {
            "content-type": "application/connect+json",
            "connect-protocol-version": "1",
            authorization: `Bearer ${token}`,
            ...streamAccept,
          },
          envelope(0, hugeAfterSeq),
        ),
      judge: judgeConnectStream,
      names: namesAfterSeq,
      encodingHeader: "connect-content-encoding",
      compression,
    });
    const grpcAccept = compression === "identity" ? {} : { "grpc-accept-encoding": compression };
    out.push({
      title: `gRPC (grpc-message trailer), grpc-accept-encoding ${compression}`,
      over: "h2",
      request: () =>
        req(
          ACK,
          { "content-type": "application/grpc+json", te: "trailers", ...grpcAccept },
          envelope(0, hugeSeq),
        ),
      judge: judgeGrpc,
      names: namesSeq,
      compression,
    });
    out.push({
      title: `gRPC-Web (trailer frame), grpc-accept-encoding ${compression}`,
      over: "h1",
      request: () =>
        req(
          ACK,
          { "content-type": "application/grpc-web+json", ...grpcAccept },
          envelope(0, hugeSeq),
        ),
      judge: judgeGrpcWeb,
      names: namesSeq,
      encodingHeader: "grpc-encoding",
      compression,
    });
  }
  return out;
}

describeEachDatabase("refusals that quote the input are capped", (env) => {
  let h2: H2Client;
  let token = "";
  beforeAll(async () => {
    h2 = new H2Client(env().server.url);
    token = (await env().team()).leadToken;
  });
  afterAll(() => h2.close());

  for (const c of cases()) {
    it(`${c.title}: the error stays under the cap, keeps its code and names the field`, async () => {
      const request = c.request(token);
      const o =
        c.over === "h2"
          ? await h2.request(request)
          : await h1Request(env().server.url, false, request);
      expect(o.kind, o.kind === "transport-failure" ? o.reason : "").toBe("response");
      if (o.kind !== "response") return;
      const v = c.judge(o);
      expect(v.kind, JSON.stringify(v).slice(0, 300)).toBe("error");
      if (v.kind !== "error") return;
      expect(v.code).toBe(Code.InvalidArgument);
      expect(v.message).toMatch(c.names);
      expect(v.message.endsWith(CUT), v.message.slice(-40)).toBe(true);
      expect(v.message.length).toBeLessThanOrEqual(CAP + CUT.length);
      // What travelled: the body (error JSON, frames) and, for gRPC, the trailers.
      const trailerBytes = Object.values(o.trailers).join("").length;
      expect(o.body.length + trailerBytes).toBeLessThan(MAX_ERROR_BYTES);
      // A capped error is still compressed when the client asked (it is over
      // compressMinBytes), so the size check above held for compressed answers too.
      if (c.encodingHeader && c.compression !== "identity") {
        expect(o.headers[c.encodingHeader]).toBe(c.compression);
      }
    });
  }

  it("a message under the cap is sent whole", async () => {
    const o = await h1Request(
      env().server.url,
      false,
      req(ACK, { "content-type": "application/json" }, Buffer.from('{"seq":"short"}')),
    );
    if (o.kind !== "response") throw new Error(o.reason);
    const v = judgeConnectUnary(o);
    expect(v.kind === "error" && v.message).toBe(
      "cannot decode field team.v1.AckRequest.seq from JSON: expected bigint (uint64): short out of range",
    );
  });
});
