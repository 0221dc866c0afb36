/**
 * The value a statement must have produced (a RETURNING row, a looked-up key). Its absence
 * is a bug in the query, not a condition callers handle.
 */
export function one<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("statement returned no row where one was required");
  return value;
}
