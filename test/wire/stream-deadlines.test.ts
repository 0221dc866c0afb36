import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { expect, it } from "vitest";
import {
  SubscribeRequestSchema,
  TeamService,
  WatchTeamRequestSchema,
} from "../../gen/team/v1/team_service_pb.js";
import { describeEachDatabase } from "../support/harness.js";
import { codeName, envelope, H2Client, judgeGrpc } from "../support/raw-rpc.js";

/**
 * A server stream whose grpc-timeout passes ends with DeadlineExceeded, not OK: an OK end
 * would tell the client its stream finished by itself. Sent by hand (a generated client
 * enforces its own deadline and would report DeadlineExceeded whatever the server said),
 * over the bare-stream path and over connect-node.
 */
for (const grpcFastPath of [true, false]) {
  describeEachDatabase(
    `an expired grpc-timeout on a server stream (${grpcFastPath ? "bare HTTP/2 stream" : "connect-node"})`,
    (env) => {
      const streams = [
        {
          method: TeamService.method.subscribe.name,
          body: toBinary(SubscribeRequestSchema, create(SubscribeRequestSchema, { afterSeq: 0n })),
          token: (t: Awaited<ReturnType<ReturnType<typeof env>["team"]>>) => t.member("mate").token,
        },
        {
          method: TeamService.method.watchTeam.name,
          body: toBinary(WatchTeamRequestSchema, create(WatchTeamRequestSchema, {})),
          token: (t: Awaited<ReturnType<ReturnType<typeof env>["team"]>>) => t.leadToken,
        },
      ];
      for (const s of streams) {
        for (const timeout of ["0n", "200m"]) {
          it(`${s.method} with grpc-timeout ${timeout} ends DeadlineExceeded`, async () => {
            const t = await env().team("mate");
            const h2 = new H2Client(env().server.url);
            const o = await h2.request({
              path: `/${TeamService.typeName}/${s.method}`,
              headers: {
                "content-type": "application/grpc",
                te: "trailers",
                authorization: `Bearer ${s.token(t)}`,
                "grpc-timeout": timeout,
              },
              body: envelope(0, s.body),
              timeoutMs: 15_000,
            });
            if (o.kind !== "response") throw new Error(o.reason);
            const v = judgeGrpc(o);
            expect(v.kind === "error" ? codeName(v.code) : v.kind).toBe(
              codeName(Code.DeadlineExceeded),
            );
          });
        }
      }
    },
    { grpcFastPath },
  );
}
