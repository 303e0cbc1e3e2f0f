import { useEffect, useRef, useState } from 'react';
import { useT } from '../i18n.js';
import type { Playback } from '../types.js';

/** How the player plays: the browser's own HLS, hls.js over Media Source Extensions, or one MP4. */
export type PlayerEngine = 'native' | 'hls.js' | 'mp4';

/** The quality menu's value for adaptive playback of the HLS master. */
const AUTO = 'auto';

/** `playUrl` of the rendition labelled `label`, else of the largest (the list comes largest first). */
export function renditionUrl(playback: Playback, label: string): string {
  return (playback.renditions.find((r) => r.label === label) ?? playback.renditions[0])?.playUrl ?? '';
}

/**
 * One player for a video (issue 13, item 3): the HLS master with adaptive playback (the browser's
 * own HLS where it has one, else hls.js, loaded only now so the console's main script stays
 * small), a quality menu over the MP4 renditions, and the cover as poster. Changing quality keeps
 * the position, and playing if it was. `onQuality` reports the rendition chosen ('' for adaptive).
 */
export function Player({ playback, title, onQuality }: { playback: Playback; title: string; onQuality?: (label: string) => void }) {
  const t = useT();
  const ref = useRef<HTMLVideoElement>(null);
  const [quality, setQuality] = useState(playback.hlsUrl ? AUTO : (playback.renditions[0]?.label ?? ''));
  const [engine, setEngine] = useState<PlayerEngine>();
  const [problem, setProblem] = useState('');
  const hlsUrl = playback.hlsUrl;
  const mp4 = quality === AUTO ? '' : renditionUrl(playback, quality);

  useEffect(() => {
    const video = ref.current;
    if (!video) return;
    let done = false;
    let destroy: (() => void) | undefined;
    const resumeAt = video.currentTime;
    const wasPlaying = !video.paused && !video.ended;
    const resume = () => {
      if (resumeAt > 0) video.currentTime = resumeAt;
      if (wasPlaying) void video.play().catch(() => undefined);
    };
    setProblem('');
    const playMp4 = (url: string) => {
      video.src = url;
      video.addEventListener('loadedmetadata', resume, { once: true });
      setEngine('mp4');
    };
    if (quality !== AUTO) {
      playMp4(mp4);
    } else if (video.canPlayType('application/vnd.apple.mpegurl')) {
      video.src = hlsUrl;
      video.addEventListener('loadedmetadata', resume, { once: true });
      setEngine('native');
    } else {
      // No HLS of its own (Firefox, most Chromium builds): hls.js, fetched the first time it is needed.
      import('hls.js/light').then(
        ({ default: Hls }) => {
          if (done) return;
          if (!Hls.isSupported()) {
            playMp4(renditionUrl(playback, ''));
            return;
          }
          // No worker: the console's CSP allows no blob: scripts.
          const hls = new Hls({ enableWorker: false, startPosition: resumeAt > 0 ? resumeAt : -1 });
          // The stream out of reach (a public URL on another host that the console's CSP or CORS
          // keeps from hls.js, a network error): the largest MP4 plays instead, and the page says why.
          hls.on(Hls.Events.ERROR, (_e, data) => {
            if (!data.fatal || done) return;
            hls.destroy();
            destroy = undefined;
            setProblem(t.player.hlsFailed(data.details));
            playMp4(renditionUrl(playback, ''));
          });
          if (wasPlaying) hls.on(Hls.Events.MANIFEST_PARSED, () => void video.play().catch(() => undefined));
          hls.loadSource(hlsUrl);
          hls.attachMedia(video);
          destroy = () => hls.destroy();
          setEngine('hls.js');
        },
        () => {
          if (!done) playMp4(renditionUrl(playback, ''));
        },
      );
    }
    return () => {
      done = true;
      destroy?.();
      video.removeEventListener('loadedmetadata', resume);
    };
    // The renditions' addresses change only with the video; the menu's choice and the master decide.
  }, [quality, hlsUrl, mp4]);

  return (
    <figure className="player">
      <video
        ref={ref}
        controls
        playsInline
        preload="metadata"
        poster={playback.coverUrl || undefined}
        aria-label={t.player.label(title)}
        data-engine={engine}
        data-quality={quality}
      />
      <figcaption className="row between">
        <span className="field inline">
          <label htmlFor="player-quality">{t.player.quality}</label>
          <select
            id="player-quality"
            value={quality}
            onChange={(e) => {
              setQuality(e.target.value);
              onQuality?.(e.target.value === AUTO ? '' : e.target.value);
            }}
          >
            {hlsUrl ? <option value={AUTO}>{t.player.auto}</option> : null}
            {playback.renditions.map((r) => (
              <option key={r.label} value={r.label}>
                {t.player.rendition(r.label, r.width, r.height)}
              </option>
            ))}
          </select>
        </span>
        <span className="muted small-text">{engine ? t.player.engines[engine] : ''}</span>
      </figcaption>
      {problem ? (
        <p className="error" role="alert">
          {problem}
        </p>
      ) : null}
    </figure>
  );
}
