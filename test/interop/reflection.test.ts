import { create, createFileRegistry, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import { createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ServerReflection,
  type ServerReflectionRequestSchema,
  type ServerReflectionResponse,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { MessageSchema } from "../../gen/team/v1/message_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { openTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestEnv, type TestEnv } from "../support/harness.js";

type Question = MessageInitShape<typeof ServerReflectionRequestSchema>;

const HOSTED = [
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
  "team.v1.TeamService",
];

/** The files ordered so that each comes after its imports (as a FileDescriptorSet wants). */
function importsFirst(files: FileDescriptorProto[]): FileDescriptorProto[] {
  const byName = new Map(files.map((f) => [f.name, f]));
  const ordered: FileDescriptorProto[] = [];
  const visit = (file: FileDescriptorProto | undefined) => {
    if (!file || ordered.includes(file)) return;
    for (const name of file.dependency) visit(byName.get(name));
    ordered.push(file);
  };
  for (const file of files) visit(file);
  return ordered;
}

// Reflection reads descriptors only, never the database: one database kind is enough.
describe("gRPC server reflection (v1 and v1alpha)", () => {
  let testDb: TestDatabase | undefined;
  let env: (TestEnv & { close(): Promise<void> }) | undefined;
  beforeAll(async () => {
    testDb = await openTestDatabase("embedded");
    env = await startTestEnv("embedded", testDb);
  });
  afterAll(async () => {
    await env?.close();
    await testDb?.dispose();
  });

  // Reflection is a bidi stream, so HTTP/2 for every protocol. No token: none is needed.
  const transports: Record<string, (baseUrl: string) => Transport> = {
    grpc: (baseUrl) => createGrpcTransport({ baseUrl }),
    "grpc-web": (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "2" }),
    connect: (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "2" }),
  };

  /** Asks the questions one after another on one stream, as buf curl and grpcurl do. */
  async function ask(
    questions: Question[],
    protocol = "grpc",
  ): Promise<ServerReflectionResponse[]> {
    const url = env?.server.url ?? "";
    const client = createClient(ServerReflection, transports[protocol]?.(url) as Transport);
    async function* requests() {
      for (const q of questions) yield { host: "127.0.0.1", ...q };
    }
    const answers: ServerReflectionResponse[] = [];
    for await (const answer of client.serverReflectionInfo(requests())) answers.push(answer);
    return answers;
  }

  const filesIn = (answer: ServerReflectionResponse | undefined): FileDescriptorProto[] => {
    const r = answer?.messageResponse;
    if (r?.case !== "fileDescriptorResponse") throw new Error(`not files: ${r?.case}`);
    return r.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
  };

  for (const protocol of Object.keys(transports)) {
    it(`${protocol}: lists every hosted service, with no token`, async () => {
      const [answer] = await ask(
        [{ messageRequest: { case: "listServices", value: "" } }],
        protocol,
      );
      expect(answer?.messageResponse.case).toBe("listServicesResponse");
      const names =
        answer?.messageResponse.case === "listServicesResponse"
          ? answer.messageResponse.value.service.map((s) => s.name)
          : [];
      expect(names).toEqual(HOSTED);
      expect(answer?.validHost).toBe("127.0.0.1");
      expect(answer?.originalRequest?.messageRequest.case).toBe("listServices");
    });
  }

  it("a service's file comes with its imports, enough for a client to rebuild the service", async () => {
    const [answer] = await ask([
      { messageRequest: { case: "fileContainingSymbol", value: "team.v1.TeamService" } },
    ]);
    const files = filesIn(answer);
    expect(files[0]?.name).toBe("team/v1/team_service.proto");
    expect(files.map((f) => f.name).sort()).toEqual([
      "google/protobuf/duration.proto",
      "google/protobuf/timestamp.proto",
      "team/v1/enums.proto",
      "team/v1/export.proto",
      "team/v1/feed.proto",
      "team/v1/history.proto",
      "team/v1/message.proto",
      "team/v1/records.proto",
      // Imported for the RuleViolation error detail, which no field names.
      "team/v1/rule_violation.proto",
      "team/v1/team_service.proto",
    ]);

    // What a client without our .proto files does: build a registry from the answer alone.
    const registry = createFileRegistry(
      create(FileDescriptorSetSchema, { file: importsFirst(files) }),
    );
    const service = registry.getService("team.v1.TeamService");
    expect(service?.methods.map((m) => [m.name, m.methodKind])).toEqual(
      TeamService.methods.map((m) => [m.name, m.methodKind]),
    );
    const message = registry.getMessage("team.v1.Message");
    // Every case of the oneof, as the compiled contract has them (permission_* included).
    expect(message?.oneofs[0]?.fields.map((f) => f.name)).toEqual(
      MessageSchema.oneofs[0]?.fields.map((f) => f.name),
    );
    expect(message?.oneofs[0]?.fields.map((f) => f.name)).toContain("permission_response");
    // JSON names survive (protoc-gen-es strips the default ones; the descriptor restores them).
    expect(registry.getMessage("team.v1.SubscribeRequest")?.fields[0]?.jsonName).toBe("afterSeq");
  });

  it("finds the file of every kind of symbol: method, message, field, oneof, enum, enum value, WKT, error detail", async () => {
    const cases: [string, string][] = [
      ["team.v1.TeamService.Send", "team/v1/team_service.proto"],
      ["team.v1.Envelope", "team/v1/records.proto"],
      ["team.v1.Envelope.seq", "team/v1/records.proto"],
      ["team.v1.Message.kind", "team/v1/message.proto"],
      ["team.v1.RequestStatus", "team/v1/enums.proto"],
      ["team.v1.REQUEST_STATUS_PENDING", "team/v1/enums.proto"],
      ["grpc.health.v1.HealthCheckResponse.ServingStatus", "health/v1/health.proto"],
      ["grpc.health.v1.HealthCheckResponse.NOT_SERVING", "health/v1/health.proto"],
      ["grpc.health.v1.Health.Watch", "health/v1/health.proto"],
      ["grpc.reflection.v1alpha.ServerReflection", "grpc/reflection/v1alpha/reflection.proto"],
      ["google.protobuf.Timestamp", "google/protobuf/timestamp.proto"],
      // No method mentions it, but every refusal carries one: a gRPC client decodes it by name.
      ["team.v1.RuleViolation", "team/v1/rule_violation.proto"],
    ];
    const answers = await ask(
      cases.map(([symbol]) => ({
        messageRequest: { case: "fileContainingSymbol", value: symbol },
      })),
    );
    expect(answers.map((a) => filesIn(a)[0]?.name)).toEqual(cases.map(([, file]) => file));
  });

  it("sends a file's imports once per stream; the file asked for always", async () => {
    const answers = await ask([
      { messageRequest: { case: "fileContainingSymbol", value: "team.v1.TeamService" } },
      { messageRequest: { case: "fileByFilename", value: "team/v1/records.proto" } },
      { messageRequest: { case: "fileContainingSymbol", value: "team.v1.Member" } },
    ]);
    expect(answers.map((a) => filesIn(a).length)).toEqual([10, 1, 1]);
    expect(filesIn(answers[1])[0]?.name).toBe("team/v1/records.proto");
    // A new stream starts afresh.
    const [again] = await ask([
      { messageRequest: { case: "fileByFilename", value: "team/v1/records.proto" } },
    ]);
    expect(filesIn(again).map((f) => f.name)).toEqual([
      "team/v1/records.proto",
      "google/protobuf/timestamp.proto",
      "team/v1/enums.proto",
      "team/v1/message.proto",
    ]);
  });

  it("answers what it cannot find with NOT_FOUND and keeps the stream open; a blank question is INVALID_ARGUMENT", async () => {
    const answers = await ask([
      { messageRequest: { case: "fileContainingSymbol", value: "team.v1.Nope" } },
      { messageRequest: { case: "fileByFilename", value: "team/v1/nope.proto" } },
      { messageRequest: { case: "allExtensionNumbersOfType", value: "team.v1.Nope" } },
      {
        messageRequest: {
          case: "fileContainingExtension",
          value: { containingType: "team.v1.Envelope", extensionNumber: 1000 },
        },
      },
      {},
      { messageRequest: { case: "allExtensionNumbersOfType", value: "team.v1.Envelope" } },
      { messageRequest: { case: "listServices", value: "" } },
    ]);
    const errors = answers
      .slice(0, 5)
      .map((a) => (a.messageResponse.case === "errorResponse" ? a.messageResponse.value : a));
    expect(errors.map((e) => ("errorCode" in e ? e.errorCode : e))).toEqual([5, 5, 5, 5, 3]);
    expect(errors[0]).toMatchObject({ errorMessage: 'symbol "team.v1.Nope" not found' });
    expect(answers[5]?.messageResponse).toEqual({
      case: "allExtensionNumbersResponse",
      value: expect.objectContaining({ baseTypeName: "team.v1.Envelope", extensionNumber: [] }),
    });
    expect(answers[6]?.messageResponse.case).toBe("listServicesResponse");
  });

  it("v1alpha gives the same answers as v1", async () => {
    const client = createClient(
      ServerReflectionV1alpha,
      createGrpcTransport({ baseUrl: env?.server.url ?? "" }),
    );
    async function* requests() {
      yield { messageRequest: { case: "listServices" as const, value: "" } };
      yield {
        messageRequest: { case: "fileContainingSymbol" as const, value: "team.v1.Envelope" },
      };
    }
    const answers = [];
    for await (const answer of client.serverReflectionInfo(requests())) answers.push(answer);
    const [listed, file] = answers;
    expect(
      listed?.messageResponse.case === "listServicesResponse" &&
        listed.messageResponse.value.service.map((s) => s.name),
    ).toEqual(HOSTED);
    const v1 = await ask([
      { messageRequest: { case: "fileContainingSymbol", value: "team.v1.Envelope" } },
    ]);
    expect(
      file?.messageResponse.case === "fileDescriptorResponse" &&
        file.messageResponse.value.fileDescriptorProto,
    ).toEqual(
      v1[0]?.messageResponse.case === "fileDescriptorResponse" &&
        v1[0].messageResponse.value.fileDescriptorProto,
    );
  });
});
