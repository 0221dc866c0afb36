import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/**
 * TeamService on @grpc/grpc-js in this process, loaded from proto/ at run time (as
 * test/agents/grpc-js-agent.ts does in a process of its own): for tests that need to see a
 * call the way a grpc-js client reports it, status code and details included.
 */
export interface GrpcJsSubscribeResponse {
  envelope?: { seq: string };
  heartbeat?: { lastSeq: string };
}

interface TeamServiceClient extends grpc.Client {
  subscribe(
    request: { afterSeq: string },
    metadata: grpc.Metadata,
  ): grpc.ClientReadableStream<GrpcJsSubscribeResponse>;
}
type TeamServiceConstructor = new (
  target: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ChannelOptions,
) => TeamServiceClient;

const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));
let loaded: TeamServiceConstructor | undefined;

function teamService(): TeamServiceConstructor {
  if (!loaded) {
    const definition = protoLoader.loadSync("team/v1/team_service.proto", {
      includeDirs: [protoDir],
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const team = grpc.loadPackageDefinition(definition).team as grpc.GrpcObject;
    loaded = (team.v1 as grpc.GrpcObject).TeamService as unknown as TeamServiceConstructor;
  }
  return loaded;
}

/** A grpc-js client of `target` ("host:port"), its calls authenticated with `token`. */
export function grpcJsClient(target: string, token: string) {
  const client = new (teamService())(target, grpc.credentials.createInsecure(), {
    "grpc.enable_http_proxy": 0, // talk to the target directly whatever the environment says
  });
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  return {
    subscribe: (afterSeq: bigint) => client.subscribe({ afterSeq: String(afterSeq) }, metadata),
    close: () => client.close(),
  };
}

/** A grpc-js status code's name, as grpc-js's own enum spells it ("RESOURCE_EXHAUSTED"). */
export const grpcStatusName = (code: grpc.status) => grpc.status[code];
