/**
 * performance.now() readings as milliseconds since the epoch, with microseconds kept, to
 * compare with another process's wall-clock timestamps (h2load logs request starts in
 * microseconds of the system clock). `performance.timeOrigin + now` can be milliseconds
 * off the system clock (4 ms measured here); Date.now() is the system clock but in whole
 * milliseconds. So the offset is taken at the instants Date.now() ticks over: there the
 * wall clock is exactly the new millisecond, and performance.now() says when that was.
 */
export function epochClock(samples = 5): (performanceMs: number) => number {
  const offsets: number[] = [];
  for (let i = 0; i < samples; i++) {
    const before = Date.now();
    let now = Date.now();
    let at = performance.now();
    // Spins at most a millisecond: until the wall clock's millisecond changes.
    while (now === before) {
      at = performance.now();
      now = Date.now();
    }
    offsets.push(now - at);
  }
  offsets.sort((a, b) => a - b);
  const offset = offsets[Math.floor(offsets.length / 2)] as number;
  return (performanceMs) => performanceMs + offset;
}
