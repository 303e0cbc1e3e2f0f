/**
 * The console's languages (issue 13, item 6): English and Simplified Chinese, one typed catalogue
 * each (messages/en.ts, messages/zh-CN.ts; the Chinese one must have every key of the English one,
 * which the compiler and test/console/console-i18n.test.ts check). The language is the one the admin chose
 * (remembered in this browser), else the browser's first that we have, else English.
 */
import { useSyncExternalStore } from 'react';
import { en, type Messages } from './messages/en.js';
import { zhCN } from './messages/zh-CN.js';

/** The console's languages, by BCP 47 tag (also the locale dates and numbers are written in). */
export const LOCALES = ['en', 'zh-CN'] as const;
export type Locale = (typeof LOCALES)[number];

const CATALOGUES: Record<Locale, Messages> = { en, 'zh-CN': zhCN };
/** Where the admin's choice is kept (this browser only; the desktop app's window too). */
const STORAGE_KEY = 'vop.locale';

/** The browser's preferred languages mapped to ours: any `zh` (zh, zh-CN, zh-Hans, zh-SG…) is zh-CN. */
export function pickLocale(preferred: readonly string[]): Locale {
  for (const tag of preferred) {
    const lower = tag.toLowerCase();
    if (lower.startsWith('zh')) return 'zh-CN';
    if (lower.startsWith('en')) return 'en';
  }
  return 'en';
}

function initialLocale(): Locale {
  try {
    const saved = window.localStorage.getItem(STORAGE_KEY);
    if (saved && (LOCALES as readonly string[]).includes(saved)) return saved as Locale;
  } catch {
    // Storage refused (a locked-down profile): go by the browser.
  }
  return pickLocale(navigator.languages?.length ? navigator.languages : [navigator.language]);
}

let locale: Locale = initialLocale();
const listeners = new Set<() => void>();
document.documentElement.lang = locale;

/** The chosen language. */
export function currentLocale(): Locale {
  return locale;
}

/** The chosen language's messages, for code outside components (formatting, errors). */
export function messages(): Messages {
  return CATALOGUES[locale];
}

/** Switches the language, remembers it in this browser, and re-renders what uses it. */
export function setLocale(next: Locale): void {
  locale = next;
  try {
    window.localStorage.setItem(STORAGE_KEY, next);
  } catch {
    // Not remembered, still switched.
  }
  document.documentElement.lang = next;
  listeners.forEach((l) => l());
}

function subscribe(l: () => void): () => void {
  listeners.add(l);
  return () => {
    listeners.delete(l);
  };
}

/** The chosen language's messages; the component renders again when the language changes. */
export function useT(): Messages {
  return CATALOGUES[useSyncExternalStore(subscribe, currentLocale)];
}

/** The chosen language; the component renders again when it changes. */
export function useLocale(): Locale {
  return useSyncExternalStore(subscribe, currentLocale);
}
