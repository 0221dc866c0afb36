/**
 * The task list's dependency graph, as pure functions: no database, so each is tested alone
 * (the store loads a team's edges; the protocol asks here).
 */

/** One dependency: `taskId` waits on `blockedBy`. */
export interface TaskEdge {
  taskId: string;
  blockedBy: string;
}

/**
 * A cycle through `start`, if the edges hold one: the path from `start` along "waits on"
 * back to `start`, both ends included (["a", "a"] for a task waiting on itself,
 * ["a", "b", "a"] for two waiting on each other). The edges of a graph that was acyclic
 * before edges touching `start` were added can only close cycles through `start`, so this is
 * the whole check. Depth-first with a visited set: each task and edge is looked at once,
 * however many paths a diamond-shaped plan has.
 */
export function cycleThrough(edges: readonly TaskEdge[], start: string): string[] | undefined {
  const waitsOn = new Map<string, string[]>();
  for (const e of edges) {
    const list = waitsOn.get(e.taskId);
    if (list) list.push(e.blockedBy);
    else waitsOn.set(e.taskId, [e.blockedBy]);
  }
  for (const list of waitsOn.values()) list.sort();
  const visited = new Set<string>();
  // An explicit stack (a plan may be thousands of tasks deep): each frame is a task on the
  // current path and the index of the next edge to follow from it.
  const path: string[] = [start];
  const next: number[] = [0];
  while (path.length > 0) {
    const depth = path.length - 1;
    const at = path[depth] as string;
    const out = waitsOn.get(at) ?? [];
    const i = next[depth] as number;
    if (i >= out.length) {
      path.pop();
      next.pop();
      continue;
    }
    next[depth] = i + 1;
    const to = out[i] as string;
    if (to === start) return [...path, start];
    if (visited.has(to)) continue;
    visited.add(to);
    path.push(to);
    next.push(0);
  }
  return undefined;
}

/** A cycle as a sentence's words: "a" -> "b" -> "a". */
export const cycleWords = (cycle: readonly string[]) =>
  cycle.map((id) => JSON.stringify(id)).join(" -> ");
