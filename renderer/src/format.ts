/** How the console writes numbers, sizes, times and statuses for people. */

/** Spec section 3: the values of a video's Status. */
export const STATUS_NAMES: Record<number, string> = {
  0: 'Waiting for deletion',
  1: 'Normal (playable)',
  2: 'Waiting for download',
  3: 'Downloading',
  4: 'Download failed',
  5: 'Waiting for transcoding',
  6: 'Transcoding',
  7: 'Transcoding failed',
  8: 'Not uploaded',
};

export function statusName(s: number): string {
  return STATUS_NAMES[s] ?? `Status ${s}`;
}

/** A tone for a status badge. */
export function statusTone(s: number): 'ok' | 'bad' | 'busy' | 'idle' {
  if (s === 1) return 'ok';
  if (s === 4 || s === 7) return 'bad';
  if (s === 3 || s === 6) return 'busy';
  return 'idle';
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
  return `${i === 0 ? v : v.toFixed(v >= 100 ? 0 : 1)} ${units[i]}`;
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

/** Time left for people: "12 s", "3 min 5 s". */
export function formatEta(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** A moment (ISO string or Unix ms) in the browser's locale. */
export function formatTime(t: string | number | null | undefined): string {
  if (t === null || t === undefined || t === '') return '—';
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? '—' : d.toLocaleString();
}

export function formatRate(bytesPerSecond: number): string {
  return bytesPerSecond > 0 ? `${formatBytes(bytesPerSecond)}/s` : 'stalled';
}

/** The first 8 characters of an id, for tight columns (the full id is in the title). */
export function shortId(id: string): string {
  return id.slice(0, 8);
}
