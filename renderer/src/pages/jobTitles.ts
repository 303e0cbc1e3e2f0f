import { useEffect, useState } from 'react';
import { api } from '../api.js';
import type { VideoDetail } from '../types.js';

/** Video titles by id, fetched once each (the job list carries ids only). */
const cache = new Map<string, Promise<string>>();

function titleOf(videoId: string): Promise<string> {
  let p = cache.get(videoId);
  if (!p) {
    p = api<VideoDetail>('GET', `/videos/${encodeURIComponent(videoId)}`)
      .then((d) => d.video.title || '(no title)')
      .catch(() => '');
    cache.set(videoId, p);
  }
  return p;
}

/** Titles of the given videos, filled in as they arrive. */
export function useVideoTitles(videoIds: string[]): Record<string, string> {
  const [titles, setTitles] = useState<Record<string, string>>({});
  const key = [...new Set(videoIds)].sort().join(',');
  useEffect(() => {
    let alive = true;
    for (const id of key.split(',').filter(Boolean)) {
      void titleOf(id).then((t) => alive && setTitles((old) => (old[id] === t ? old : { ...old, [id]: t })));
    }
    return () => {
      alive = false;
    };
  }, [key]);
  return titles;
}
