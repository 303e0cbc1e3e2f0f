/**
 * Text put into HTML the server writes itself (the watch page, the upload page's error page, the
 * oEmbed snippet): every character that could end an attribute's value or open a tag is written
 * as a character reference, so a title or an address is never markup.
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
