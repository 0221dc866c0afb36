import type http2 from "node:http2";
import { describe, expect, it } from "vitest";
import { CallValues } from "../../server/grpc/call-values.js";
import { RequestHeaders } from "../../server/grpc/request-headers.js";

/** Node's header object of a gRPC request, as http2 hands it over. */
const incoming = (): http2.IncomingHttpHeaders => ({
  ":method": "POST",
  ":path": "/team.v1.TeamService/Send",
  ":authority": "127.0.0.1:4000",
  "content-type": "application/grpc",
  authorization: "Bearer tp_x",
  "x-repeated": ["one", "two"] as unknown as string,
  te: "trailers",
});

/** What a Headers made up front from the same object holds (pseudo-headers left out). */
function upFront(raw: http2.IncomingHttpHeaders): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(raw)) {
    if (k.startsWith(":") || v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [String(v)]) h.append(k, one);
  }
  return h;
}

const asHeaders = (raw: http2.IncomingHttpHeaders) => new RequestHeaders(raw) as unknown as Headers;

describe("RequestHeaders answers as a Headers made up front would", () => {
  it("get and has, in any case, without copying", () => {
    const lazy = asHeaders(incoming());
    const real = upFront(incoming());
    for (const name of [
      "authorization",
      "Authorization",
      "CONTENT-TYPE",
      "x-repeated",
      "missing",
    ]) {
      expect(lazy.get(name), name).toBe(real.get(name));
      expect(lazy.has(name), name).toBe(real.has(name));
    }
  });

  it("pseudo-headers and invalid names: what Headers says (none held; a TypeError)", () => {
    const lazy = asHeaders(incoming());
    expect(() => lazy.get(":path")).toThrow(TypeError);
    expect(() => upFront(incoming()).get(":path")).toThrow(TypeError);
    expect(() => lazy.get("bad name")).toThrow(TypeError);
  });

  it("iterating, and changes, after which it is a plain Headers", () => {
    const lazy = asHeaders(incoming());
    const real = upFront(incoming());
    expect([...lazy]).toEqual([...real]);
    const seen: string[] = [];
    lazy.forEach((v, k) => {
      seen.push(`${k}=${v}`);
    });
    expect(seen).toEqual([...real].map(([k, v]) => `${k}=${v}`));
    lazy.set("authorization", "Bearer other");
    lazy.append("x-new", "1");
    lazy.delete("te");
    expect(lazy.get("authorization")).toBe("Bearer other");
    expect(lazy.get("x-new")).toBe("1");
    expect(lazy.has("te")).toBe(false);
    expect(lazy instanceof Headers).toBe(true);
    expect(new Headers(lazy).get("x-new")).toBe("1");
  });
});

describe("CallValues", () => {
  it("gives a key's default until set, then the value; delete restores the default", async () => {
    const { createContextKey } = await import("@connectrpc/connect");
    const key = createContextKey<string>("default");
    const values = new CallValues();
    expect(values.get(key)).toBe("default");
    expect(values.set(key, "set")).toBe(values);
    expect(values.get(key)).toBe("set");
    values.set(key, undefined as unknown as string);
    expect(values.get(key)).toBeUndefined();
    values.delete(key);
    expect(values.get(key)).toBe("default");
  });
});
