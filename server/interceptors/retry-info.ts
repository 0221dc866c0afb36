import { create } from "@bufbuild/protobuf";
import { DurationSchema } from "@bufbuild/protobuf/wkt";
import { RetryInfoSchema } from "@team-protocols/client/retry-info.js";

// google.rpc.RetryInfo is built in the client (retry-info.ts there), which reads it too.
export { RetryInfoSchema };

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
