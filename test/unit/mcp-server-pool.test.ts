import { describe, expect, it } from "vitest";
import { createInstancePool } from "../../server/mcp/mcp-server-pool.js";

/** A pool of named items that records what it closed, in order. */
function poolOf(maxIdlePerKey: number, maxIdle: number) {
  const closed: string[] = [];
  const pool = createInstancePool<string>({
    maxIdlePerKey,
    maxIdle,
    close: (item) => closed.push(item),
  });
  return { pool, closed };
}

describe("the pool of built MCP servers (mcp-server-pool.ts)", () => {
  it("an instance taken is the key's most recent one, and is out of the pool until given back", () => {
    const { pool } = poolOf(8, 256);
    pool.give("alice", "a1");
    pool.give("alice", "a2");
    pool.give("bob", "b1");
    expect(pool.take("alice")).toBe("a2");
    expect(pool.take("alice")).toBe("a1");
    // Nothing idle is left for alice: two requests at once never share one instance.
    expect(pool.take("alice")).toBeUndefined();
    expect(pool.take("carol")).toBeUndefined();
    expect(pool.size).toBe(1);
  });

  it("past the bound per key, that key's oldest idle instance is closed", () => {
    const { pool, closed } = poolOf(2, 256);
    pool.give("alice", "a1");
    pool.give("bob", "b1");
    pool.give("alice", "a2");
    pool.give("alice", "a3");
    expect(closed).toEqual(["a1"]);
    expect(pool.size).toBe(3);
    expect(pool.take("alice")).toBe("a3");
    expect(pool.take("alice")).toBe("a2");
  });

  it("past the bound in all, the least recently given back key's oldest goes first", () => {
    const { pool, closed } = poolOf(8, 3);
    pool.give("alice", "a1");
    pool.give("bob", "b1");
    pool.give("alice", "a2");
    pool.give("carol", "c1");
    // bob's key is now the least recently given back one (alice's was renewed by a2).
    expect(closed).toEqual(["b1"]);
    pool.give("dave", "d1");
    expect(closed).toEqual(["b1", "a1"]);
    expect(pool.size).toBe(3);
    expect(pool.take("bob")).toBeUndefined();
  });

  it("with no room at all, what is given back is closed at once; close() ends every idle one", () => {
    const none = poolOf(0, 256);
    none.pool.give("alice", "a1");
    expect(none.closed).toEqual(["a1"]);
    expect(none.pool.take("alice")).toBeUndefined();
    const some = poolOf(8, 256);
    some.pool.give("alice", "a1");
    some.pool.give("bob", "b1");
    some.pool.close();
    expect(some.closed.sort()).toEqual(["a1", "b1"]);
    expect(some.pool.size).toBe(0);
  });
});
