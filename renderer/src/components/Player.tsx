import { useEffect, useRef, useState } from 'react';
import { formatDuration } from '../format.js';
import { useT } from '../i18n.js';
import type { Playback } from '../types.js';

/** How the player plays: the browser's own HLS, hls.js over Media Source Extensions, or one MP4. */
export type PlayerEngine = 'native' | 'hls.js' | 'mp4';

/** The quality menu's value for adaptive playback of the HLS master. */
const AUTO = 'auto';

/** The captions menu's value for no captions. */
const OFF = '';

/** A tile of the storyboard (the seek previews): when it shows, and where in which sprite. */
interface Tile {
  start: number;
  end: number;
  url: string;
  x: number;
  y: number;
  w: number;
  h: number;
}

/** A chapter of the video, as its chapters track says: where it starts (seconds) and its title. */
interface Chapter {
  start: number;
  title: string;
}

/** `playUrl` of the rendition labelled `label`, else of the largest (the list comes largest first). */
export function renditionUrl(playback: Playback, label: string): string {
  return (playback.renditions.find((r) => r.label === label) ?? playback.renditions[0])?.playUrl ?? '';
}

/**
 * One player for a video (issue 13, item 3): the HLS master with adaptive playback (the browser's
 * own HLS where it has one, else hls.js, loaded only now so the console's main script stays
 * small), a quality menu over the MP4 renditions, and the cover as poster. Changing quality keeps
 * the position, and playing if it was. `onQuality` reports the rendition chosen ('' for adaptive).
 *
 * Captions are `<track>` elements, one a caption track, chosen in a menu of their own (the HLS
 * master's subtitle renditions are the same tracks: hls.js is told not to add them again); the
 * chapters track, when the video has one, is read into a list of chapters under the player that
 * seek to where each starts.
 */
export function Player({ playback, title, onQuality }: { playback: Playback; title: string; onQuality?: (label: string) => void }) {
  const t = useT();
  const ref = useRef<HTMLVideoElement>(null);
  const [quality, setQuality] = useState(playback.hlsUrl ? AUTO : (playback.renditions[0]?.label ?? ''));
  const [engine, setEngine] = useState<PlayerEngine>();
  const [problem, setProblem] = useState('');
  const [chosenCaption, setCaption] = useState(OFF);
  const [chapters, setChapters] = useState<Chapter[]>([]);
  const chaptersRef = useRef<HTMLTrackElement>(null);
  const [tiles, setTiles] = useState<Tile[]>([]);
  const [hover, setHover] = useState<{ x: number; time: number; tile?: Tile }>();
  const storyboardRef = useRef<HTMLTrackElement>(null);
  const storyboardUrl = playback.storyboardUrl ?? '';
  const hlsUrl = playback.hlsUrl;
  const mp4 = quality === AUTO ? '' : renditionUrl(playback, quality);
  const captions = playback.captions ?? [];
  const chaptersUrl = playback.chaptersUrl ?? '';
  // A caption removed while shown: the menu goes back to Off.
  const caption = captions.some((c) => c.id === chosenCaption) ? chosenCaption : OFF;
  const captionIds = captions.map((c) => c.id).join(' ');

  // Where the last source was, and whether it played, read before it was torn down: hls.js empties
  // the element as it goes (position 0, paused), so reading the element afterwards would lose both.
  const carried = useRef<{ at: number; playing: boolean }>(undefined);

  useEffect(() => {
    const video = ref.current;
    if (!video) return;
    let done = false;
    let destroy: (() => void) | undefined;
    // A new source keeps the position, and plays if the last one did: a quality chosen, or a new
    // address for the same stream (a signed application's rolls over as the page reloads).
    const { at: resumeAt, playing: wasPlaying } = carried.current ?? { at: video.currentTime, playing: !video.paused && !video.ended };
    carried.current = undefined;
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
          // No worker: the console's CSP allows no blob: scripts. No WebVTT: the master's subtitle
          // renditions are the captions the <track> elements already give.
          const hls = new Hls({ enableWorker: false, enableWebVTT: false, startPosition: resumeAt > 0 ? resumeAt : -1 });
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
      carried.current = { at: video.currentTime, playing: !video.paused && !video.ended };
      destroy?.();
      video.removeEventListener('loadedmetadata', resume);
    };
    // The renditions' addresses change only with the video; the menu's choice and the master decide.
  }, [quality, hlsUrl, mp4]);

  // The caption chosen is shown, every other subtitle track (ours, or one the browser's own HLS
  // made of the master's subtitle renditions) is not; again when the tracks or the source change.
  useEffect(() => {
    const video = ref.current;
    if (!video) return;
    const ours = new Map<TextTrack, string>();
    for (const el of video.querySelectorAll<HTMLTrackElement>('track[data-caption]')) ours.set(el.track, el.dataset.caption ?? '');
    for (const track of Array.from(video.textTracks)) {
      if (track.kind !== 'subtitles' && track.kind !== 'captions') continue;
      const mode: TextTrackMode = caption !== OFF && ours.get(track) === caption ? 'showing' : 'disabled';
      if (track.mode !== mode) track.mode = mode;
    }
  }, [caption, captionIds, engine]);

  // Captions chosen in the browser's own controls: the menu follows.
  useEffect(() => {
    const video = ref.current;
    if (!video) return;
    const follow = () => {
      for (const el of video.querySelectorAll<HTMLTrackElement>('track[data-caption]')) {
        if (el.track.mode === 'showing') return setCaption(el.dataset.caption ?? OFF);
      }
      setCaption(OFF);
    };
    video.textTracks.addEventListener('change', follow);
    return () => video.textTracks.removeEventListener('change', follow);
  }, []);

  // The chapters track is read, not shown: 'hidden' has the browser load its cues, read once loaded.
  useEffect(() => {
    const el = chaptersRef.current;
    setChapters([]);
    if (!el || !chaptersUrl) return;
    const read = () => {
      const cues = Array.from(el.track.cues ?? []) as VTTCue[];
      setChapters(cues.map((c) => ({ start: c.startTime, title: c.text })));
    };
    el.addEventListener('load', read);
    el.track.mode = 'hidden';
    if (el.readyState === HTMLTrackElement.LOADED) read();
    return () => el.removeEventListener('load', read);
  }, [chaptersUrl]);

  // The storyboard is a metadata track: its cues (`<n>.jpg#xywh=x,y,w,h`, relative to it) are read once loaded.
  useEffect(() => {
    const el = storyboardRef.current;
    if (!el || !storyboardUrl) return;
    const read = () => {
      const cues = Array.from(el.track.cues ?? []) as VTTCue[];
      const out: Tile[] = [];
      for (const c of cues) {
        const m = /^([^#\s]+)#xywh=(\d+),(\d+),(\d+),(\d+)$/.exec(c.text.trim());
        if (m) out.push({ start: c.startTime, end: c.endTime, url: new URL(m[1]!, storyboardUrl).href, x: +m[2]!, y: +m[3]!, w: +m[4]!, h: +m[5]! });
      }
      setTiles(out);
    };
    el.addEventListener('load', read);
    el.track.mode = 'hidden';
    if (el.readyState === HTMLTrackElement.LOADED) read();
    return () => el.removeEventListener('load', read);
  }, [storyboardUrl]);

  const seek = (to: number) => {
    const video = ref.current;
    if (video) video.currentTime = to;
  };

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
      >
        {captions.map((c) => (
          <track key={c.id} kind="subtitles" src={c.url} srcLang={c.language} label={c.label} data-caption={c.id} />
        ))}
        {chaptersUrl ? <track ref={chaptersRef} kind="chapters" src={chaptersUrl} /> : null}
        {storyboardUrl ? <track ref={storyboardRef} kind="metadata" src={storyboardUrl} /> : null}
      </video>
      {tiles.length > 0 ? <SeekPreviews tiles={tiles} video={ref} hover={hover} setHover={setHover} label={t.player.seekPreviews} /> : null}
      <figcaption className="row between">
        <span className="row player-menus">
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
          {captions.length > 0 ? (
            <span className="field inline">
              <label htmlFor="player-captions">{t.player.captions}</label>
              <select id="player-captions" value={caption} onChange={(e) => setCaption(e.target.value)}>
                <option value={OFF}>{t.player.captionsOff}</option>
                {captions.map((c) => (
                  <option key={c.id} value={c.id} lang={c.language}>
                    {c.label}
                  </option>
                ))}
              </select>
            </span>
          ) : null}
        </span>
        <span className="muted small-text">{engine ? t.player.engines[engine] : ''}</span>
      </figcaption>
      {problem ? (
        <p className="error" role="alert">
          {problem}
        </p>
      ) : null}
      {chapters.length > 0 ? (
        <nav className="chapters" aria-labelledby="player-chapters">
          <h3 id="player-chapters">{t.player.chapters}</h3>
          <ol className="chapter-list">
            {chapters.map((c) => (
              <li key={`${c.start}-${c.title}`}>
                <button type="button" className="small" aria-label={t.player.chapterAt(formatDuration(c.start), c.title)} onClick={() => seek(c.start)}>
                  <span className="muted">{formatDuration(c.start)}</span> {c.title}
                </button>
              </li>
            ))}
          </ol>
        </nav>
      ) : null}
    </figure>
  );
}

/**
 * A seek bar with the storyboard's tile under the pointer (the browser's own controls have no
 * place for one): a click seeks there. Under the player, as wide as it.
 */
function SeekPreviews({ tiles, video, hover, setHover, label }: {
  tiles: Tile[];
  video: React.RefObject<HTMLVideoElement | null>;
  hover: { x: number; time: number; tile?: Tile } | undefined;
  setHover: (h: { x: number; time: number; tile?: Tile } | undefined) => void;
  label: string;
}) {
  const duration = () => video.current?.duration || tiles.at(-1)!.end;
  const at = (e: React.PointerEvent<HTMLDivElement>) => {
    const r = e.currentTarget.getBoundingClientRect();
    const f = Math.min(1, Math.max(0, (e.clientX - r.left) / Math.max(1, r.width)));
    const time = f * duration();
    return { x: e.clientX - r.left, time, tile: tiles.find((c) => time >= c.start && time < c.end) };
  };
  return (
    <div
      className="seek-previews"
      data-testid="seek-previews"
      role="slider"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={Math.round(duration())}
      aria-valuenow={Math.round(video.current?.currentTime ?? 0)}
      tabIndex={-1}
      onPointerMove={(e) => setHover(at(e))}
      onPointerLeave={() => setHover(undefined)}
      onClick={(e) => {
        const v = video.current;
        if (v) v.currentTime = at(e as unknown as React.PointerEvent<HTMLDivElement>).time;
      }}
    >
      <div className="seek-previews-track" />
      {hover ? (
        <div className="seek-previews-tip" style={{ left: `${Math.max(0, hover.x - (hover.tile?.w ?? 60) / 2)}px` }} data-testid="seek-preview">
          {hover.tile ? (
            <div
              className="seek-previews-tile"
              data-cue={`${hover.tile.url.split('/').pop()}#${hover.tile.x},${hover.tile.y}`}
              style={{ width: hover.tile.w, height: hover.tile.h, backgroundImage: `url("${hover.tile.url}")`, backgroundPosition: `${-hover.tile.x}px ${-hover.tile.y}px` }}
            />
          ) : null}
          <span>{formatDuration(hover.time)}</span>
        </div>
      ) : null}
    </div>
  );
}
