/**
 * Response messages that several streams send as they are (WatchTeam's events of a shared
 * page, handlers/feed-page-share.ts): a writer encodes one once, and every stream writes the
 * same bytes, so that streams stalled on the same events hold one copy of them in their
 * write buffers, not one each.
 *
 * Keyed by the message object and held weakly: the bytes go when the message does.
 */
const encoded = new WeakMap<object, Promise<Uint8Array> | null>();

/** `message` will be written by several streams as it is; never changed after this. */
export function markShared<T extends object>(message: T): T {
  if (!encoded.has(message)) encoded.set(message, null);
  return message;
}

/**
 * The bytes `encode` makes of `message`: made once for a shared message (when `reusable`:
 * the encoding does not depend on the stream, e.g. no compression), else every time.
 */
export function encodeShared(
  message: object,
  reusable: boolean,
  encode: () => Promise<Uint8Array>,
): Promise<Uint8Array> {
  if (!reusable) return encode();
  const known = encoded.get(message);
  if (known === undefined) return encode();
  if (known !== null) return known;
  // The promise, not the bytes: streams that ask while it is being made wait for it.
  const bytes = encode();
  encoded.set(message, bytes);
  return bytes;
}
