/**
 * The watch page's HTML (routes/watch.ts; docs/watch.md): one small page made for an `<iframe>`,
 * its player in `widget/watch/` (watch.js, watch.css, and hls.js where the browser needs it), its
 * link-preview tags (Open Graph, Twitter's player card, oEmbed's discovery link), and what it
 * shows instead of a player when the video is not there to play.
 *
 * The page loads nothing from outside this server: its Content-Security-Policy says so. Its data
 * goes to its script in a JSON block, which a browser never runs.
 */
import { escapeHtml } from '../core/htmlText.js';
import type { WatchAnswer, WatchVideo } from '../services/watchService.js';
import { WATCH_TEXT, type WatchLanguage } from './watchText.js';

/** The page's URL options (docs/watch.md), read leniently: an option that does not read is left at its default. */
export interface WatchOptions {
  autoplay: boolean;
  muted: boolean;
  loop: boolean;
  /** Seconds from the start. */
  start: number;
  /** A caption language to turn on (`en`, `fr-CA`): the first track whose language is it or starts with it. */
  captions: string;
  controls: boolean;
}

/** `1`, `true` or an empty value (`?autoplay`) turn an option on; `0` and `false` off. */
function flag(v: unknown, fallback: boolean): boolean {
  if (typeof v !== 'string') return fallback;
  if (v === '' || v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false') return false;
  return fallback;
}

export function readWatchOptions(query: Record<string, unknown>): WatchOptions {
  const start = typeof query.start === 'string' ? Number(query.start) : 0;
  const captions = typeof query.captions === 'string' && /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$/.test(query.captions) ? query.captions : '';
  return {
    autoplay: flag(query.autoplay, false),
    muted: flag(query.muted, false),
    loop: flag(query.loop, false),
    start: Number.isFinite(start) && start > 0 ? Math.min(start, 86_400 * 7) : 0,
    captions,
    controls: flag(query.controls, true),
  };
}

/** Where the page's own files are, relative to the page (`<base>/embed/<id>`). */
export const WATCH_ASSETS = 'assets/';

/**
 * The page's Content-Security-Policy: its own script and style, media and images from this
 * server (`mediaOrigin`, the media addresses' origin, which a public URL may make another), hls.js's
 * worker and MediaSource from blob: addresses; any site may frame it.
 */
export function watchPageCsp(mediaOrigin: string): string {
  const self = `'self' ${mediaOrigin}`;
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${self} data:`,
    `media-src ${self} blob:`,
    `connect-src ${self}`,
    "worker-src 'self' blob:",
    "base-uri 'none'",
    "form-action 'none'",
    'frame-ancestors *',
  ].join('; ');
}

/** The page for `answer`: a player, or a message. `oembedUrl`: the discovery link's address, for a playable video. */
export function renderWatchPage(answer: WatchAnswer, options: WatchOptions, lang: WatchLanguage, oembedUrl: string): string {
  const text = WATCH_TEXT[lang];
  if (answer.kind === 'message') {
    const title = answer.title ?? 'vop';
    return page(lang, title, '', `<div class="vop-message" role="status"><p>${escapeHtml(text.messages[answer.refusal])}</p></div>`);
  }
  const v = answer.video;
  const data = {
    video: { id: v.id, title: v.title, duration: v.duration, hlsUrl: v.hlsUrl, mp4: v.mp4, captions: v.captions, chaptersUrl: v.chaptersUrl, storyboardUrl: v.storyboardUrl, expiresAt: v.expiresAt ?? null },
    viewsUrl: v.viewsUrl,
    options,
    text: text.player,
    hlsScript: `${WATCH_ASSETS}hls.min.js`,
  };
  const body =
    `<div class="vop-watch${options.controls ? '' : ' vop-bare'}" id="vop-watch">` +
    `<video id="vop-video" playsinline preload="metadata"${v.posterUrl ? ` poster="${escapeHtml(v.posterUrl)}"` : ''} aria-label="${escapeHtml(v.title)}"></video>` +
    (options.controls ? controlBar(text.player) : '') +
    `<div class="vop-tools" id="vop-tools" hidden><button type="button" class="vop-menu-button" id="vop-menu-button" aria-haspopup="menu" aria-expanded="false" aria-label="${escapeHtml(text.player.settings)}" title="${escapeHtml(text.player.settings)}">&#9881;</button>` +
    `<div class="vop-menu" id="vop-menu" role="menu" hidden></div></div>` +
    `<div class="vop-message" id="vop-error" role="alert" hidden></div>` +
    `</div>` +
    // `<` is escaped so that no value ends the block early.
    `<script type="application/json" id="vop-watch-data">${JSON.stringify(data).replace(/</g, '\\u003c')}</script>` +
    `<script src="${WATCH_ASSETS}watch.js"></script>`;
  return page(lang, v.title, previewTags(v, oembedUrl), body);
}

/**
 * The player's own controls (the browser's have no place for seek previews): play, the seek bar
 * with its preview tile, the time, sound, fullscreen. Its script (watch.js) makes them work.
 */
function controlBar(t: (typeof WATCH_TEXT)['en']['player']): string {
  const button = (id: string, label: string, glyph: string) => `<button type="button" class="vop-btn" id="${id}" aria-label="${escapeHtml(label)}" title="${escapeHtml(label)}">${glyph}</button>`;
  return (
    `<div class="vop-controls" id="vop-controls">` +
    button('vop-play', t.play, '&#9654;') +
    `<div class="vop-seek" id="vop-seek" role="slider" tabindex="0" aria-label="${escapeHtml(t.seek)}" aria-valuemin="0" aria-valuemax="0" aria-valuenow="0">` +
    `<div class="vop-seek-track"><div class="vop-seek-played" id="vop-played"></div></div>` +
    `<div class="vop-preview" id="vop-preview" hidden><div class="vop-preview-tile" id="vop-preview-tile"></div><span id="vop-preview-time"></span></div>` +
    `</div>` +
    `<span class="vop-time" id="vop-time">0:00</span>` +
    button('vop-mute', t.mute, '&#128264;') +
    button('vop-full', t.fullscreen, '&#9974;') +
    `</div>`
  );
}

/** Open Graph and Twitter card tags, and oEmbed's discovery link: what a chat or a CMS shows for the link. */
function previewTags(v: WatchVideo, oembedUrl: string): string {
  const tags: Array<[string, string, string]> = [
    ['property', 'og:type', 'video.other'],
    ['property', 'og:title', v.title],
    ['property', 'og:url', v.pageUrl],
    ['property', 'og:site_name', 'vop'],
    ...(v.description ? ([['property', 'og:description', v.description.slice(0, 300)]] as Array<[string, string, string]>) : []),
    ...(v.posterUrl ? ([['property', 'og:image', v.posterUrl], ['property', 'og:image:width', String(v.width)], ['property', 'og:image:height', String(v.height)]] as Array<[string, string, string]>) : []),
    ...(v.mp4[0]
      ? ([
          ['property', 'og:video', v.mp4[0].url],
          ['property', 'og:video:type', 'video/mp4'],
          ['property', 'og:video:width', String(v.mp4[0].width)],
          ['property', 'og:video:height', String(v.mp4[0].height)],
        ] as Array<[string, string, string]>)
      : []),
    ['name', 'twitter:card', 'player'],
    ['name', 'twitter:title', v.title],
    ['name', 'twitter:player', v.pageUrl],
    ['name', 'twitter:player:width', String(v.width)],
    ['name', 'twitter:player:height', String(v.height)],
    ...(v.posterUrl ? ([['name', 'twitter:image', v.posterUrl]] as Array<[string, string, string]>) : []),
  ];
  return (
    tags.map(([attr, name, content]) => `<meta ${attr}="${name}" content="${escapeHtml(content)}">`).join('') +
    `<link rel="alternate" type="application/json+oembed" href="${escapeHtml(oembedUrl)}" title="${escapeHtml(v.title)}">`
  );
}

function page(lang: WatchLanguage, title: string, head: string, body: string): string {
  return (
    `<!doctype html><html lang="${lang}"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<meta name="referrer" content="no-referrer">` +
    `<title>${escapeHtml(title)}</title>${head}` +
    `<link rel="stylesheet" href="${WATCH_ASSETS}watch.css"></head><body>${body}</body></html>`
  );
}
