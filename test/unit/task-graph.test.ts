import { describe, expect, it } from "vitest";
import { cycleThrough, cycleWords, type TaskEdge } from "../../server/domain/task-graph.js";

const edges = (...pairs: [string, string][]): TaskEdge[] =>
  pairs.map(([taskId, blockedBy]) => ({ taskId, blockedBy }));

describe("cycleThrough: the cycle a task's dependencies close", () => {
  it("finds none in a chain, a tree or a diamond", () => {
    expect(cycleThrough(edges(["b", "a"], ["c", "b"]), "c")).toBeUndefined();
    expect(
      cycleThrough(edges(["d", "b"], ["d", "c"], ["b", "a"], ["c", "a"]), "d"),
    ).toBeUndefined();
    expect(cycleThrough([], "a")).toBeUndefined();
  });

  it("finds a task waiting on itself, on its waiter, and cycles of any length, as a path", () => {
    expect(cycleThrough(edges(["a", "a"]), "a")).toEqual(["a", "a"]);
    expect(cycleThrough(edges(["a", "b"], ["b", "a"]), "a")).toEqual(["a", "b", "a"]);
    const n = 500;
    const chain = edges(
      ...Array.from({ length: n }, (_, i) => [`t${i}`, `t${(i + 1) % n}`] as [string, string]),
    );
    const cycle = cycleThrough(chain, "t0");
    expect(cycle).toHaveLength(n + 1);
    expect(cycle?.[0]).toBe("t0");
    expect(cycle?.at(-1)).toBe("t0");
  });

  it("walks each task once: a wide diamond lattice with no cycle is answered at once", () => {
    // 30 layers of 30 tasks, each waiting on every task of the layer below: 30^30 paths.
    const layers = 30;
    const wide = 30;
    const lattice: TaskEdge[] = [];
    for (let l = 1; l < layers; l++) {
      for (let i = 0; i < wide; i++) {
        for (let j = 0; j < wide; j++)
          lattice.push({ taskId: `${l}.${i}`, blockedBy: `${l - 1}.${j}` });
      }
    }
    expect(cycleThrough(lattice, "29.0")).toBeUndefined();
    lattice.push({ taskId: "0.5", blockedBy: "29.0" });
    expect(cycleThrough(lattice, "29.0")).toHaveLength(layers + 1);
  });

  it("only reports cycles through the start", () => {
    // b and c wait on each other (a state the server never stores); a only waits on b.
    expect(cycleThrough(edges(["a", "b"], ["b", "c"], ["c", "b"]), "a")).toBeUndefined();
  });

  it("words a cycle for a refusal", () => {
    expect(cycleWords(["a", "b", "a"])).toBe('"a" -> "b" -> "a"');
  });
});
