/**
 * Language tags of tracks and captions, as BCP-47 (what HLS's LANGUAGE and WebVTT players
 * expect). Sources tag their streams in ISO 639-2 ("eng", "chi"); applications send BCP-47
 * ("en", "pt-BR", "zh-Hans"). Both are made one canonical form by ICU (Intl), which knows the
 * registry, so no table of ours goes stale.
 */

const NAMES = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });

/** The longest tag taken: BCP-47 tags in use are far shorter; the registry's longest is 35 or so. */
const MAX_TAG_LENGTH = 35;

/**
 * The canonical BCP-47 form of `tag` ("eng" → "en", "pt-br" → "pt-BR"), when it is well-formed
 * and its language is one the registry knows; null otherwise, "und" (undetermined) included.
 */
export function canonicalLanguage(tag: string): string | null {
  if (typeof tag !== 'string' || tag === '' || tag.length > MAX_TAG_LENGTH) return null;
  let canonical: string;
  try {
    canonical = Intl.getCanonicalLocales(tag)[0] ?? '';
  } catch {
    return null; // RangeError: not a well-formed tag
  }
  const primary = canonical.split('-')[0] ?? '';
  if (primary === '' || primary === 'und' || NAMES.of(primary) === undefined) return null;
  return canonical;
}

/** The English name of a canonical tag ("en" → "English", "pt-BR" → "Brazilian Portuguese"); the tag itself when unknown. */
export function languageName(tag: string): string {
  try {
    return NAMES.of(tag) ?? tag;
  } catch {
    return tag;
  }
}
