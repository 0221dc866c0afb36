import type { ContextKey, ContextValues } from "@connectrpc/connect";

type Slots = Record<symbol, unknown>;

/**
 * A call's context values, as connect's createContextValues() makes them (each value under
 * its key's symbol, the key's default when unset), with the methods on a prototype: the
 * connect helper makes three closures per call, which an idle stream keeps for hours.
 */
export class CallValues implements ContextValues {
  get<T>(key: ContextKey<T>): T {
    return key.id in this ? ((this as unknown as Slots)[key.id] as T) : key.defaultValue;
  }

  set<T>(key: ContextKey<T>, value: T): this {
    (this as unknown as Slots)[key.id] = value;
    return this;
  }

  delete(key: ContextKey<unknown>): this {
    delete (this as unknown as Slots)[key.id];
    return this;
  }
}
