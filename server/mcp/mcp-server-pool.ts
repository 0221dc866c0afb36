/**
 * Idle instances kept by key, for reuse: one is taken for one request and given back after,
 * so no two requests ever share one. What is kept is bounded per key and in all; past either
 * bound the least recently given back goes first, and what goes is closed.
 */
export interface InstancePool<T> {
  /** An idle instance of `key` (the most recently given back), or undefined: build one. */
  take(key: string): T | undefined;
  /** `item`, taken for `key` (or built for it), idle again. */
  give(key: string, item: T): void;
  /** Closes every idle instance. */
  close(): void;
  /** Idle instances kept now. */
  readonly size: number;
}

export interface InstancePoolOptions<T> {
  maxIdlePerKey: number;
  maxIdle: number;
  /** Ends an instance the pool lets go of. */
  close(item: T): void;
}

export function createInstancePool<T>(o: InstancePoolOptions<T>): InstancePool<T> {
  // A key's idle instances, its most recent last; the map's order is the keys' recency
  // (a key is moved to the end when an instance of it is given back).
  const idle = new Map<string, T[]>();
  let size = 0;
  const evictOldest = () => {
    const [key, items] = idle.entries().next().value as [string, T[]];
    const item = items.shift() as T;
    size--;
    if (items.length === 0) idle.delete(key);
    o.close(item);
  };
  return {
    take(key) {
      const items = idle.get(key);
      const item = items?.pop();
      if (item === undefined) return undefined;
      size--;
      if (items?.length === 0) idle.delete(key);
      return item;
    },
    give(key, item) {
      if (o.maxIdlePerKey <= 0 || o.maxIdle <= 0) return o.close(item);
      const items = idle.get(key) ?? [];
      idle.delete(key);
      idle.set(key, items);
      items.push(item);
      size++;
      if (items.length > o.maxIdlePerKey) {
        size--;
        o.close(items.shift() as T);
      }
      while (size > o.maxIdle) evictOldest();
    },
    close() {
      for (const items of idle.values()) for (const item of items) o.close(item);
      idle.clear();
      size = 0;
    },
    get size() {
      return size;
    },
  };
}
