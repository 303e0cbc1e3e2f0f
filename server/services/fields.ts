/**
 * The cutting rules of spec sections 4.2 and 8. Lengths are counted in Unicode code points, not
 * UTF-16 units, so a title of emoji or CJK text is cut where a person would count.
 */

/** Spec section 8: the limits, in characters. */
export const FIELD_LIMITS = {
  VideoTitle: 50,
  Description: 400,
  Tags: 60,
  Actors: 50,
  CreateUser: 50,
  SourceFilePath: 200,
} as const;

/** At most 5 tags (spec 4.2). */
export const MAX_TAGS = 5;

/** The first `max` code points of `value`, never splitting a surrogate pair. */
export function cutToCodePoints(value: string, max: number): string {
  let count = 0;
  let end = 0;
  for (const ch of value) {
    if (count === max) return value.slice(0, end);
    count++;
    end += ch.length;
  }
  return value;
}

/**
 * Tags: split on commas (ASCII, and the full-width comma CJK keyboards type), trim each, drop
 * empty ones, keep the first 5, join with "," and cut the result to 60 characters.
 */
export function normalizeTags(value: string): string {
  const tags = value
    .split(/[,\uFF0C]/)
    .map((t) => t.trim())
    .filter((t) => t.length > 0)
    .slice(0, MAX_TAGS);
  return cutToCodePoints(tags.join(','), FIELD_LIMITS.Tags);
}
