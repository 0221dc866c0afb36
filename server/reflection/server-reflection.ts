import {
  create,
  type DescFile,
  fromBinary,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import {
  ServerReflection,
  type ServerReflectionRequest,
  ServerReflectionRequestSchema,
  type ServerReflectionResponse,
  ServerReflectionResponseSchema,
} from "@team-protocols/contract/grpc/reflection/v1/reflection_pb.js";
import {
  ServerReflection as ServerReflectionV1alpha,
  ServerReflectionRequestSchema as V1alphaRequestSchema,
  ServerReflectionResponseSchema as V1alphaResponseSchema,
} from "@team-protocols/contract/grpc/reflection/v1alpha/reflection_pb.js";
import { createDescriptorIndex, type DescriptorIndex } from "./descriptor-index.js";

/** One answer's oneof, as create() takes it. */
type MessageResponse = NonNullable<
  MessageInitShape<typeof ServerReflectionResponseSchema>["messageResponse"]
>;

/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha) for every service `router`
 * hosts, so buf curl, grpcurl and other reflection clients can list the services, describe
 * them and call them with no schema. connect-es has none built in; this answers from the
 * descriptors that protoc-gen-es embeds in gen/.
 *
 * The services are read from the router at the first request, so the ones registered
 * after this call are included too. `extraFiles` adds types that no method refers to but
 * clients meet anyway: error details, which a gRPC client can only decode by reflection.
 * Reflection needs no token: it only describes the API.
 */
export function serveReflection(router: ConnectRouter, extraFiles: DescFile[] = []): void {
  let index: DescriptorIndex | undefined;
  const getIndex = () => {
    index ??= createDescriptorIndex(
      router.handlers.map((handler) => handler.service),
      extraFiles,
    );
    return index;
  };

  router.service(ServerReflection, {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const request of requests) yield answer(getIndex(), request, sent);
    },
  });

  // v1alpha is v1 under an older package name: the messages are field for field the same,
  // so its requests and responses convert through the wire format, losslessly.
  router.service(ServerReflectionV1alpha, {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const alphaRequest of requests) {
        const request = fromBinary(
          ServerReflectionRequestSchema,
          toBinary(V1alphaRequestSchema, alphaRequest),
        );
        const response = answer(getIndex(), request, sent);
        yield fromBinary(V1alphaResponseSchema, toBinary(ServerReflectionResponseSchema, response));
      }
    },
  });
}

/**
 * One answer. `sent` is the names of the files already sent on this stream: a file comes
 * with the imports the client does not have yet (as grpc-go does), so a client can build
 * descriptors from what it received.
 */
function answer(
  index: DescriptorIndex,
  request: ServerReflectionRequest,
  sent: Set<string>,
): ServerReflectionResponse {
  return create(ServerReflectionResponseSchema, {
    validHost: request.host,
    originalRequest: request,
    messageResponse: messageResponse(index, request.messageRequest, sent),
  });
}

function messageResponse(
  index: DescriptorIndex,
  question: ServerReflectionRequest["messageRequest"],
  sent: Set<string>,
): MessageResponse {
  const files = (file: DescFile | undefined, what: string): MessageResponse =>
    file
      ? {
          case: "fileDescriptorResponse",
          value: { fileDescriptorProto: withImports(file, sent) },
        }
      : error(Code.NotFound, `${what} not found`);

  switch (question.case) {
    case "listServices":
      return {
        case: "listServicesResponse",
        value: { service: index.serviceNames.map((name) => ({ name })) },
      };
    case "fileByFilename":
      return files(index.fileByName(question.value), `file "${question.value}"`);
    case "fileContainingSymbol":
      return files(index.fileContainingSymbol(question.value), `symbol "${question.value}"`);
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = question.value;
      return files(
        index.fileContainingExtension(containingType, extensionNumber),
        `extension ${extensionNumber} of "${containingType}"`,
      );
    }
    case "allExtensionNumbersOfType": {
      const numbers = index.extensionNumbersOf(question.value);
      if (numbers === undefined) return error(Code.NotFound, `type "${question.value}" not found`);
      return {
        case: "allExtensionNumbersResponse",
        value: { baseTypeName: question.value, extensionNumber: numbers },
      };
    }
    case undefined:
      return error(Code.InvalidArgument, "the request sets none of the message_request fields");
  }
}

function error(code: Code, message: string): MessageResponse {
  return { case: "errorResponse", value: { errorCode: code, errorMessage: message } };
}

/** `file` first, then its transitive imports that this stream has not sent yet. */
function withImports(file: DescFile, sent: Set<string>): Uint8Array[] {
  const out = [encoded(file)];
  sent.add(file.proto.name);
  const visit = (current: DescFile) => {
    for (const dependency of current.dependencies) {
      if (sent.has(dependency.proto.name)) continue;
      sent.add(dependency.proto.name);
      out.push(encoded(dependency));
      visit(dependency);
    }
  };
  visit(file);
  return out;
}

// Descriptors never change while the process runs: serialise each file once.
const encodedFiles = new WeakMap<DescFile, Uint8Array>();
function encoded(file: DescFile): Uint8Array {
  let bytes = encodedFiles.get(file);
  if (!bytes) {
    bytes = toBinary(FileDescriptorProtoSchema, file.proto);
    encodedFiles.set(file, bytes);
  }
  return bytes;
}
