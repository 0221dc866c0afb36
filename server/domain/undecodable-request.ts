/**
 * connect-es's messages for a request body it cannot decode: a protobuf that does not parse,
 * a compressed frame without an encoding, a body that does not decompress. connect-es raises
 * them as Internal, but they are the client's fault (InvalidArgument). A unary call's comes
 * before any interceptor runs (rewritten on the wire, server/http/parse-error-codes.ts); a
 * stream's request is decoded inside the interceptor chain, so error mapping sees it too.
 * Worth filing upstream: connect-es should raise these as InvalidArgument itself.
 */
export const UNDECODABLE_REQUEST =
  /^(parse binary: |received compressed envelope, but do not know how to decompress$|decompression failed$)/;
