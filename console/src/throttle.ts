/**
 * Runs `fn` at most once per `ms`: the first call runs it soon (after the current burst of
 * calls), later calls within `ms` are folded into one more run at the end. The feed replays
 * hundreds of events at once; each may call for a refresh of the member list, and one
 * ListMembers answers them all.
 */
export function throttle(fn: () => void, ms: number): { (): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let last = Number.NEGATIVE_INFINITY;
  const run = () => {
    timer = undefined;
    last = Date.now();
    fn();
  };
  const call = () => {
    if (timer !== undefined) return;
    timer = setTimeout(run, Math.max(0, last + ms - Date.now()));
  };
  call.cancel = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  return call;
}
