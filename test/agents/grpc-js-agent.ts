/**
 * A teammate agent on @grpc/grpc-js alone: it loads proto/ at run time with
 * @grpc/proto-loader, so it uses no generated code and no Connect code, as an agent in a
 * project of its own would. test/interop/grpc-js.test.ts runs it as a child process.
 *
 *   TEAM_TOKEN=tp_... node --import tsx test/agents/grpc-js-agent.ts 127.0.0.1:8080
 *
 * It streams its inbox from the start and prints one JSON line per event on stdout. It
 * answers a text with "echo: <text>" to the sender, and approves a shutdown request; the
 * server then ends its stream, and it exits 0 (1 if the stream fails).
 */
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

// proto-loader gives plain objects: these describe what this agent reads and writes.
interface Envelope {
  seq: string;
  from: string;
  requestId: string;
  message: {
    kind?: string;
    text?: string;
    shutdownRequest?: { reason: string };
  };
}
interface SubscribeResponse {
  envelope?: Envelope;
  heartbeat?: { lastSeq: string };
}
type Callback<T> = (err: grpc.ServiceError | null, response?: T) => void;
interface TeamServiceClient extends grpc.Client {
  subscribe(
    request: { afterSeq: string },
    metadata: grpc.Metadata,
  ): grpc.ClientReadableStream<SubscribeResponse>;
  send(
    request: { to: string; message: object },
    metadata: grpc.Metadata,
    callback: Callback<{ seq: string; requestId: string }>,
  ): void;
}
type TeamServiceConstructor = new (
  target: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ChannelOptions,
) => TeamServiceClient;

const [target] = process.argv.slice(2);
const token = process.env.TEAM_TOKEN;
if (!target || !token) {
  process.stderr.write("usage: TEAM_TOKEN=<token> grpc-js-agent.ts <host:port>\n");
  process.exit(2);
}

const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));
const definition = protoLoader.loadSync("team/v1/team_service.proto", {
  includeDirs: [protoDir],
  longs: String, // uint64 seq as a decimal string
  enums: String,
  defaults: true,
  oneofs: true, // a oneof's set case is named in a virtual field (message.kind)
});
const team = grpc.loadPackageDefinition(definition).team as grpc.GrpcObject;
const TeamService = (team.v1 as grpc.GrpcObject).TeamService as unknown as TeamServiceConstructor;
const client = new TeamService(target, grpc.credentials.createInsecure(), {
  // Talk to the server directly even when the environment names an HTTP proxy.
  "grpc.enable_http_proxy": 0,
});

const metadata = new grpc.Metadata();
metadata.set("authorization", `Bearer ${token}`);
const print = (event: object) => process.stdout.write(`${JSON.stringify(event)}\n`);

function send(to: string, message: object): Promise<{ seq: string; requestId: string }> {
  return new Promise((resolve, reject) =>
    client.send({ to, message }, metadata, (err, response) =>
      err || !response ? reject(err) : resolve(response),
    ),
  );
}

async function handle(envelope: Envelope): Promise<void> {
  const { message } = envelope;
  print({ event: "envelope", seq: envelope.seq, from: envelope.from, kind: message.kind });
  if (message.kind === "text") {
    const sent = await send(envelope.from, { text: `echo: ${message.text}` });
    print({ event: "echoed", seq: sent.seq });
  } else if (message.kind === "shutdownRequest") {
    // The answer goes to the lead and names the request it answers.
    await send(envelope.from, {
      shutdownResponse: { requestId: envelope.requestId, approve: true },
    });
    print({ event: "shutdown_approved", requestId: envelope.requestId });
  }
}

const stream = client.subscribe({ afterSeq: "0" }, metadata);
// Envelopes are handled one at a time, in seq order.
let handling = Promise.resolve();
stream.on("data", (event: SubscribeResponse) => {
  const envelope = event.envelope;
  if (!envelope) return; // a heartbeat
  handling = handling.then(() => handle(envelope));
});
stream.on("status", (status: grpc.StatusObject) => {
  void handling.then(
    () => {
      print({ event: "stream_ended", code: grpc.status[status.code], details: status.details });
      client.close();
      process.exit(status.code === grpc.status.OK ? 0 : 1);
    },
    (err: unknown) => {
      print({ event: "failed", error: String(err) });
      process.exit(1);
    },
  );
});
stream.on("error", () => {
  // Reported by the "status" event, which follows.
});
