/**
 * What the upload widget's error page says to the person who clicked "Upload" on an application's
 * site, in the upload page's two languages (the same keys side by side): a sentence per result
 * code the page can show. The spec's own line (`ErrorCode : …, ErrorMessage : …`, spec 4.5 and
 * 7.2) follows it in small print: it is what the site's developer needs, and what clients that do
 * not ask for HTML get alone.
 */

/** Result codes the widget's page can be refused with, and the sentence for each. */
const EN = {
  title: 'Upload a video',
  close: 'Close',
  /** A link the site made wrong (missing or malformed values, a wrong token, an unknown application). */
  badLink: 'This upload link is not valid. Please tell the site you came from; the code below says why.',
  102: 'This site’s uploads are turned off on the video server.',
  105: 'This upload link has expired. Go back to the site and open the upload again.',
  106: 'Too many failed attempts from this network. Wait a minute, then try again.',
  107: 'This upload page has expired. Go back to the site and open the upload again.',
  301: 'This video no longer exists on the video server.',
  303: 'This video already has its file, or it does not take an upload.',
  serverDown: 'The video server cannot take uploads now. Try again later.',
} as const;

const ZH_CN: Record<keyof typeof EN, string> = {
  title: '上传视频',
  close: '关闭',
  badLink: '此上传链接无效。请告知您来自的网站；下方的代码说明了原因。',
  102: '此网站的上传已在视频服务器上关闭。',
  105: '此上传链接已过期。请返回网站重新打开上传。',
  106: '来自此网络的失败尝试过多。请等一分钟后再试。',
  107: '此上传页面已过期。请返回网站重新打开上传。',
  301: '视频服务器上已没有此视频。',
  303: '此视频已有文件，或它不接受上传。',
  serverDown: '视频服务器现在无法接受上传。请稍后再试。',
};

/** Both catalogues, by the page's language. */
export const ERROR_PAGE_TEXT = { en: EN, 'zh-CN': ZH_CN } as const;

export type ErrorPageLanguage = keyof typeof ERROR_PAGE_TEXT;

/** The sentence for result code `code` in `lang`. */
export function errorPageSentence(lang: ErrorPageLanguage, code: string): string {
  const text: Record<string, string> = ERROR_PAGE_TEXT[lang];
  if (Number(code) >= 500) return text.serverDown!;
  return text[code] ?? text.badLink!;
}
