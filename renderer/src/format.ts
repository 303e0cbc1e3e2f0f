/** How the console writes numbers, sizes, times and statuses for people, in the chosen language. */
import { VideoStatus } from '../../server/core/videoStatus.js';
import { currentLocale, messages } from './i18n.js';

/** Spec section 3: the values of a video's Status. */
export const STATUSES = [0, 1, 2, 3, 4, 5, 6, 7, 8] as const;

/** The server's names of its addresses (admin overview: 'This machine', 'LAN (eth0)', …) in the chosen language. */
export function addressLabel(label: string): string {
  const t = messages().integrate;
  if (label === 'This machine') return t.thisMachine; // i18n-ignore: the server's name, compared
  if (label === 'Public URL') return t.publicUrl; // i18n-ignore: the server's name, compared
  if (label === 'Script address') return t.scriptAddress; // i18n-ignore: the server's name, compared
  if (label === 'Bound address') return t.boundAddress; // i18n-ignore: the server's name, compared
  const lan = /^LAN \((.*)\)$/.exec(label);
  return lan ? t.lan(lan[1]!) : label;
}

/** Spec section 3: a video's Status in words. */
export function statusName(s: number): string {
  return messages().status.names[s] ?? messages().status.unknown(s);
}

/** A tone for a status badge. */
export function statusTone(s: number): 'ok' | 'bad' | 'busy' | 'idle' {
  if (s === VideoStatus.Normal) return 'ok';
  if (s === VideoStatus.DownloadFailed || s === VideoStatus.TranscodingFailed) return 'bad';
  if (s === VideoStatus.Downloading || s === VideoStatus.Transcoding) return 'busy';
  return 'idle';
}

/** A number in the chosen locale (digit grouping, decimal sign). */
export function formatNumber(n: number, fractionDigits = 0): string {
  return n.toLocaleString(currentLocale(), { maximumFractionDigits: fractionDigits, minimumFractionDigits: fractionDigits });
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${formatNumber(v, i === 0 || v >= 100 ? 0 : 1)} ${units[i]}`;
}

/** 75 → "1:15"; 3700 → "1:01:40". */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(r).padStart(2, '0')}` : `${m}:${String(r).padStart(2, '0')}`;
}

/** Time left for people: "12 s", "3 min 5 s" (in the chosen language). */
export function formatEta(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  const s = Math.max(0, Math.round(seconds));
  return messages().time.eta(Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60);
}

/** A moment (ISO string or Unix ms) in the chosen locale. */
export function formatTime(t: string | number | null | undefined): string {
  if (t === null || t === undefined || t === '') return '—';
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? '—' : d.toLocaleString(currentLocale());
}

export function formatRate(bytesPerSecond: number): string {
  return bytesPerSecond > 0 ? `${formatBytes(bytesPerSecond)}/s` : messages().time.stalled;
}

/** The first 8 characters of an id, for tight columns (the full id is in the title). */
export function shortId(id: string): string {
  return id.slice(0, 8);
}


