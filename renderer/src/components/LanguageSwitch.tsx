import { LOCALES, setLocale, useLocale, useT, type Locale } from '../i18n.js';

/** Each language named in itself, as language menus do. */
const LANGUAGE_NAMES: Record<Locale, string> = { en: 'English', 'zh-CN': '简体中文' };

/** The language menu: the browser's language until the admin picks one, which this browser remembers. */
export function LanguageSwitch() {
  const t = useT();
  const locale = useLocale();
  return (
    <label className="language">
      <select value={locale} onChange={(e) => setLocale(e.target.value as Locale)} aria-label={t.shell.language}>
        {LOCALES.map((l) => (
          <option key={l} value={l} lang={l}>
            {LANGUAGE_NAMES[l]}
          </option>
        ))}
      </select>
    </label>
  );
}
