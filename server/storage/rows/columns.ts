/**
 * What the two engines store differently, read back one way: sql.js keeps a flag as 0 or 1,
 * PostgreSQL as a boolean.
 */
export type FlagColumn = number | boolean;

/** A flag column's value, from either engine. */
export function flag(v: FlagColumn): boolean {
  return v === true || v === 1;
}
