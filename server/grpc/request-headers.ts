import type http2 from "node:http2";

/**
 * Headers' methods, declared as methods: Node's types declare them as properties, which a
 * subclass cannot override with methods (the runtime has them on Headers.prototype).
 */
interface HeadersMethods {
  get(name: string): string | null;
  has(name: string): boolean;
  set(name: string, value: string): void;
  append(name: string, value: string): void;
  delete(name: string): void;
  getSetCookie(): string[];
  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}
const HeadersBase = Headers as unknown as new () => HeadersMethods;

/**
 * A gRPC call's request headers as WHATWG Headers, read straight from Node's header object
 * until something needs the whole list. A call mostly asks for one header (authorization,
 * in the auth interceptor); copying every header into a Headers at the call's start
 * (undici validates and converts each name and value) cost more than the rest of a refused
 * call's header handling. `get` and `has` read Node's object; any other method first copies
 * every header in (pseudo-headers left out, as connect-node leaves them out) and then is
 * the real Headers method, so what callers see is what a Headers made up front would show.
 */
export class RequestHeaders extends HeadersBase {
  #raw: http2.IncomingHttpHeaders | undefined;

  constructor(raw: http2.IncomingHttpHeaders) {
    super();
    this.#raw = raw;
  }

  override get(name: string): string | null {
    const raw = this.#raw;
    if (raw === undefined || !isPlainName(name)) {
      this.#full();
      return super.get(name);
    }
    const value = raw[name.toLowerCase()];
    if (value === undefined) return null;
    // Headers joins repeated values with ", " (Node gives them as an array).
    return Array.isArray(value) ? value.join(", ") : String(value);
  }

  override has(name: string): boolean {
    const raw = this.#raw;
    if (raw === undefined || !isPlainName(name)) {
      this.#full();
      return super.has(name);
    }
    return raw[name.toLowerCase()] !== undefined;
  }

  override set(name: string, value: string): void {
    this.#full();
    super.set(name, value);
  }

  override append(name: string, value: string): void {
    this.#full();
    super.append(name, value);
  }

  override delete(name: string): void {
    this.#full();
    super.delete(name);
  }

  override getSetCookie(): string[] {
    this.#full();
    return super.getSetCookie();
  }

  override forEach(
    callback: (value: string, key: string, parent: Headers) => void,
    thisArg?: unknown,
  ): void {
    this.#full();
    super.forEach(callback, thisArg);
  }

  override entries(): IterableIterator<[string, string]> {
    this.#full();
    return super.entries();
  }

  override keys(): IterableIterator<string> {
    this.#full();
    return super.keys();
  }

  override values(): IterableIterator<string> {
    this.#full();
    return super.values();
  }

  override [Symbol.iterator](): IterableIterator<[string, string]> {
    this.#full();
    return super[Symbol.iterator]();
  }

  /** Copies Node's headers in, once; from then on this is a plain Headers. */
  #full(): void {
    const raw = this.#raw;
    if (raw === undefined) return;
    this.#raw = undefined;
    for (const key in raw) {
      if (key.charCodeAt(0) === 58 /* ":" */) continue;
      const value = raw[key];
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const v of value) super.append(key, v);
      else super.append(key, String(value));
    }
  }
}

/**
 * A name whose answer Node's object gives as Headers would: a token of lowercase or
 * uppercase letters, digits and dashes, not a pseudo-header. Anything else (an invalid name
 * Headers would throw for, a pseudo-header Headers never holds) goes to the real Headers.
 */
function isPlainName(name: string): boolean {
  return /^[A-Za-z0-9-]+$/.test(name);
}
