import { create, createFileRegistry, type DescMessage } from "@bufbuild/protobuf";
import {
  DurationSchema,
  FileDescriptorProtoSchema,
  file_google_protobuf_duration,
} from "@bufbuild/protobuf/wkt";

/**
 * google.rpc.RetryInfo, the standard detail that tells a client how long to wait before it
 * retries (gRPC clients and libraries read it). Built from its descriptor here rather than
 * shipped as a .proto: a second copy of a google.rpc file in gen/ would clash with the one
 * a Go or Java client already links from googleapis.
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

/** A RetryInfo detail for ConnectError: retry after `ms` milliseconds. */
export function retryInfo(ms: number) {
  const whole = Math.max(0, Math.ceil(ms));
  return {
    desc: RetryInfoSchema,
    value: create(RetryInfoSchema, {
      retryDelay: create(DurationSchema, {
        seconds: BigInt(Math.floor(whole / 1000)),
        nanos: (whole % 1000) * 1_000_000,
      }),
    }),
  };
}
