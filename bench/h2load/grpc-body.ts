import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";

/** One gRPC length-prefixed message: the compressed flag (0), the length, the bytes. */
export function grpcFrame(bytes: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + bytes.length);
  frame.writeUInt32BE(bytes.length, 1);
  frame.set(bytes, 5);
  return frame;
}

/**
 * A request body for h2load (`-d`): the message as one gRPC frame in a file of `dir`. h2load
 * sends the same body on every request of a run.
 */
export async function writeGrpcBody<Desc extends DescMessage>(
  dir: string,
  name: string,
  schema: Desc,
  init: MessageInitShape<Desc>,
): Promise<string> {
  const path = join(dir, `${name}.grpc`);
  await writeFile(path, grpcFrame(toBinary(schema, create(schema, init))));
  return path;
}
