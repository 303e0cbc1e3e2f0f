/**
 * The watch page's words (routes/watch.ts), in the console's two languages. The page shows them
 * itself (its messages) or hands them to its script (the menu's labels).
 */
import type { WatchRefusal } from '../services/watchService.js';

export type WatchLanguage = 'en' | 'zh-CN';

export interface WatchText {
  messages: Record<WatchRefusal, string>;
  /** The player's labels, given to the page's script. */
  player: {
    settings: string;
    quality: string;
    auto: string;
    captions: string;
    off: string;
    audio: string;
    playbackError: string;
    play: string;
    pause: string;
    seek: string;
    mute: string;
    unmute: string;
    fullscreen: string;
  };
}

export const WATCH_TEXT: Record<WatchLanguage, WatchText> = {
  en: {
    messages: {
      notFound: 'This video does not exist, or it was removed.',
      notReady: 'This video is still being prepared. Try again in a moment.',
      failed: 'This video could not be prepared for playing.',
      refused: 'This address does not open this video. Ask the site that gave it for a new one.',
      expired: 'This address has expired. Reload the page that showed it, or ask the site for a new one.',
    },
    player: {
      settings: 'Settings',
      quality: 'Quality',
      auto: 'Auto',
      captions: 'Captions',
      off: 'Off',
      audio: 'Audio',
      playbackError: 'The video stopped playing: the connection or the address failed. Reload to try again.',
      play: 'Play',
      pause: 'Pause',
      seek: 'Seek',
      mute: 'Mute',
      unmute: 'Unmute',
      fullscreen: 'Full screen',
    },
  },
  'zh-CN': {
    messages: {
      notFound: '该视频不存在，或已被删除。',
      notReady: '该视频仍在处理中，请稍后再试。',
      failed: '该视频未能处理为可播放的格式。',
      refused: '此地址无法打开该视频。请向提供地址的网站获取新地址。',
      expired: '此地址已过期。请刷新显示它的页面，或向网站获取新地址。',
    },
    player: {
      settings: '设置',
      quality: '画质',
      auto: '自动',
      captions: '字幕',
      off: '关闭',
      audio: '音轨',
      playbackError: '视频播放中断：连接或地址出错。请刷新重试。',
      play: '播放',
      pause: '暂停',
      seek: '进度',
      mute: '静音',
      unmute: '取消静音',
      fullscreen: '全屏',
    },
  },
};

/** `lang` (`en`, `zh`, `zh-CN`) when given, else the first of Accept-Language's that the page speaks, else English. */
export function watchLanguage(lang: string | undefined, acceptLanguage: string | undefined): WatchLanguage {
  const pick = (tag: string): WatchLanguage | undefined => (/^zh\b/i.test(tag) ? 'zh-CN' : /^en\b/i.test(tag) ? 'en' : undefined);
  if (lang) return pick(lang) ?? 'en';
  const ranked = (acceptLanguage ?? '')
    .split(',')
    .map((part) => {
      const [tag, ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([\d.]+)/.exec(p)?.[1]).find(Boolean);
      return { tag: tag ?? '', q: q === undefined ? 1 : Number(q) };
    })
    .filter((x) => x.tag && x.q > 0)
    .sort((a, b) => b.q - a.q);
  for (const { tag } of ranked) {
    const found = pick(tag);
    if (found) return found;
  }
  return 'en';
}
