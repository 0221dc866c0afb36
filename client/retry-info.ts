import { create, createFileRegistry, type DescMessage, fromBinary } from "@bufbuild/protobuf";
import {
  type Duration,
  FileDescriptorProtoSchema,
  file_google_protobuf_duration,
} from "@bufbuild/protobuf/wkt";
import type { ConnectError } from "@connectrpc/connect";

/**
 * google.rpc.RetryInfo, the standard detail that tells a client how long to wait before it
 * retries (gRPC clients and libraries read it; the server attaches it to rate and back-off
 * refusals). Built from its descriptor here rather than shipped as a .proto: a second copy of
 * a google.rpc file in gen/ would clash with the one a Go or Java client already links from
 * googleapis.
 */
const errorDetailsFile = create(FileDescriptorProtoSchema, {
  name: "google/rpc/error_details.proto",
  package: "google.rpc",
  dependency: ["google/protobuf/duration.proto"],
  syntax: "proto3",
  messageType: [
    {
      name: "RetryInfo",
      field: [
        {
          name: "retry_delay",
          jsonName: "retryDelay",
          number: 1,
          label: 1, // LABEL_OPTIONAL
          type: 11, // TYPE_MESSAGE
          typeName: ".google.protobuf.Duration",
        },
      ],
    },
  ],
});

export const RetryInfoSchema = createFileRegistry(errorDetailsFile, (name) =>
  // DescFile names carry no ".proto" suffix.
  name === `${file_google_protobuf_duration.name}.proto`
    ? file_google_protobuf_duration
    : undefined,
).getMessage("google.rpc.RetryInfo") as DescMessage;

/** The delay an error's RetryInfo detail asks for, in milliseconds; undefined without one. */
export function retryDelayMs(error: ConnectError): number | undefined {
  for (const detail of error.details) {
    const message =
      "desc" in detail
        ? detail.desc.typeName === RetryInfoSchema.typeName
          ? detail.value
          : undefined
        : detail.type === RetryInfoSchema.typeName
          ? fromBinary(RetryInfoSchema, detail.value)
          : undefined;
    const delay = (message as { retryDelay?: Duration } | undefined)?.retryDelay;
    if (delay) return Number(delay.seconds) * 1000 + Math.ceil(delay.nanos / 1_000_000);
  }
  return undefined;
}
