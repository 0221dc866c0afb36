import { randomBytes } from "node:crypto";

// randomBytes per id cost 11-16 µs of a send (a call into the CSPRNG each time); drawn 256
// ids' worth at once it is a fraction of that. The bytes are as random either way.
const ID_BYTES = 16;
const POOL_IDS = 256;
let pool = Buffer.alloc(0);
let next = 0;

/** A sent message's id (shared by every recipient's copy): "env_" and 128 random bits. */
export function newEnvelopeId(): string {
  if (next + ID_BYTES > pool.length) {
    pool = randomBytes(ID_BYTES * POOL_IDS);
    next = 0;
  }
  const id = pool.toString("base64url", next, next + ID_BYTES);
  next += ID_BYTES;
  return `env_${id}`;
}
