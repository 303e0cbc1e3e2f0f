/**
 * The console's English messages: every string a person sees, by page. messages/zh-CN.ts has the
 * same keys (its type is this one's), and test/console-i18n.test.ts fails on a key missing from
 * either or a hard-coded string in a page. Messages with figures are functions.
 */
import type { SettingProblem } from '../../../server/services/settingProblem.js';

/** A setting's name on the Settings page, by key. */
const settingLabels = {
  publicUrl: 'Public URL',
  scriptBaseUrl: 'Script address',
  port: 'Port',
  ladderRungs: 'Rendition ladder',
  audioBitrateKbps: 'Audio bitrate',
  maxUploadBytesFlash: 'Largest flash upload',
  maxUploadBytesSilverlight: 'Largest silverlight upload',
  multipartMaxBytes: 'Largest server-side upload',
  pullMaxBytes: 'Largest pulled file',
  pullAllow: 'Pull: allowed networks',
  pullDeny: 'Pull: denied networks',
  registrationsPerMinute: 'Registrations per minute',
  maxVideosPerApp: 'Videos per application',
  transcodeConcurrency: 'Transcodes at once',
  downloadConcurrency: 'Downloads at once',
};

const rungParts: Record<string, string> = { label: 'label', shortSide: 'shorter side', videoBitrateKbps: 'video kbps' };

export const en = {
  common: {
    /** Between the items of a list written inline. */
    listSeparator: ', ',
    cancel: 'Cancel',
  },
  status: {
    /** Spec section 3: the values of a video's Status. */
    names: {
      0: 'Waiting for deletion',
      1: 'Normal (playable)',
      2: 'Waiting for download',
      3: 'Downloading',
      4: 'Download failed',
      5: 'Waiting for transcoding',
      6: 'Transcoding',
      7: 'Transcoding failed',
      8: 'Not uploaded',
    } as Record<number, string>,
    unknown: (s: number) => `Status ${s}`,
  },
  time: {
    eta: (h: number, m: number, s: number) => (h > 0 ? `${h} h ${m} min` : m > 0 ? `${m} min ${s} s` : `${s} s`),
    stalled: 'stalled',
  },
  jobs: {
    types: { transcode: 'transcode', download: 'download' } as Record<string, string>,
    attempt: (n: number, of: number) => `attempt ${n} of ${of}`,
    progressOf: (what: string) => `${what} progress`,
  },
  queue: {
    title: 'Transcode monitor',
    moved: (name: string, direction: 'up' | 'down', places: number) => `“${name}” moved ${places === 1 ? 'one place' : `${places} places`} ${direction}.`,
    cancelled: (name: string) => `Transcode of “${name}” cancelled: the video is now 7 (transcoding failed) and can be retried.`,
    concurrencySaved: (n: number) => `${n} transcode${n === 1 ? '' : 's'} at once, from now on (and after a restart).`,
    running: (n: number) => `Running (${n})`,
    nothingRunning: 'Nothing is being transcoded.',
    progressOf: (name: string) => `Transcode of ${name}`,
    started: (when: string) => `started ${when}`,
    queued: (n: number) => `Queued (${n})`,
    empty: 'The queue is empty.',
    dragHint: 'Drag a row to move it in the queue, or use Up and Down.',
    dragColumn: 'Drag to reorder',
    video: 'Video',
    priority: 'Priority',
    waitingSince: 'Waiting since',
    actions: 'Actions',
    lastAttempt: (error: string) => `last attempt: ${error}`,
    up: 'Up',
    down: 'Down',
    moveUpAria: (name: string) => `Move ${name} up`,
    moveDownAria: (name: string) => `Move ${name} down`,
    recent: 'Recently finished',
    noneFinished: 'No transcode has finished yet.',
    retried: (name: string) => `Transcode of “${name}” queued again.`,
    retry: 'Retry',
    retryAria: (name: string) => `Retry ${name}`,
    cancel: 'Cancel',
    cancelAria: (name: string) => `Cancel ${name}`,
    cancelTitle: (name: string) => `Cancel the transcode of “${name}”?`,
    cancelConfirm: 'Cancel the transcode',
    cancelExplain: 'The video goes to 7 (transcoding failed) and stays there until someone retries it.',
    concurrency: 'Concurrency',
    transcodesAtOnce: 'Transcodes at once',
    apply: 'Apply',
    concurrencyHelp: (now: number, running: number, def: number, preset: string, crf: number, hls: boolean) =>
      `Now ${now} (${running} running); the default here is ${def}, half the cores. One ffmpeg already uses every core, so more at once mostly makes each slower. Preset ${preset}, CRF ${crf}${hls ? ', with HLS' : ''}.`,
  },
  video: {
    crumb: 'Videos',
    title: 'Video',
    noTitle: '(no title)',
    retry: 'Retry',
    retriedDownload: 'The download starts again.',
    retriedTranscode: 'The video is queued for transcoding again.',
    delete: 'Delete',
    deleteTitle: 'Delete this video?',
    deleteConfirm: 'Delete the video',
    deleteExplain: 'Its source, renditions and covers are removed for good. The record stays in status 0 (waiting for deletion), so applications can see what became of it.',
    deleted: 'Deleted: the video is in status 0 (waiting for deletion) and its files are gone.',
    play: 'Play',
    deletedNote: 'This video was deleted: its source, renditions and covers are gone. The record stays in status 0 with its history.',
    deletedCovers: 'Deleted: no covers any more.',
    notPlayable: (status: number, name: string) => `Files are served only while the video is in status 1; it is in ${status} (${name}).`,
    noRendition: 'No rendition yet.',
    fields: 'Fields',
    status: 'Status',
    id: 'Id',
    idWhat: 'video id',
    application: 'Application',
    uploader: 'Uploader',
    source: 'Source',
    length: 'Length',
    registered: 'Registered',
    description: 'Description',
    tags: 'Tags',
    actors: 'Actors',
    covers: 'Covers',
    coverOf: (title: string) => `Cover of ${title}`,
    noCover: 'No cover yet.',
    renditions: 'Renditions',
    rLabel: 'Rendition',
    rSize: 'Picture',
    rBitrate: 'Bitrate',
    rBytes: 'File size',
    rLinks: 'Links',
    kbps: (n: string) => `${n} kbps`,
    open: 'Open',
    download: 'Download',
    hls: 'HLS master:',
    hlsWhat: 'HLS address',
    jobs: 'Jobs',
    noJob: 'No job.',
    history: 'Status history',
    hWhen: 'When',
    hFrom: 'From',
    hTo: 'To',
    hReason: 'Reason',
    registeredState: 'registered',
    share: 'Share',
    shareHelp: 'A link anyone can open to watch this video (the MP4 of the quality chosen; the largest for Auto).',
    shareWhat: 'share link',
    embed: 'Embed',
    embedHelp: 'Plain HTML for another site: browsers with HLS play the adaptive stream, the others the MP4; the cover is the poster.',
    embedWhat: 'embed code',
    pulledFrom: (url: string) => `pulled from ${url}`,
    toBeUploaded: 'to be uploaded (nothing received yet)',
    uploaded: 'uploaded (through the upload widget or POST /Api/Video/Upload)',
  },
  player: {
    label: (title: string) => `Play ${title}`,
    quality: 'Quality',
    auto: 'Auto (adaptive, HLS)',
    rendition: (label: string, width: number, height: number) => `${label} · ${width}×${height} (MP4)`,
    engines: { native: 'HLS, played by the browser', 'hls.js': 'HLS, played with hls.js', mp4: 'One MP4 rendition' },
    hlsFailed: (details: string) => `The HLS stream could not be played (${details}). Choose an MP4 quality instead.`,
  },
  integrate: {
    title: 'Integrate',
    intro:
      'Your application calls vop from its server with its AppId, a Timestamp and a Token (MD5 of the Timestamp followed by the AppSecret), and lets its users upload from its own pages with a widget script. The code below is filled with this application’s AppId; it reads the AppSecret from the VOP_APP_SECRET environment variable.',
    addressLabel: 'Address your application reaches vop at',
    thisMachine: 'This machine',
    publicUrl: 'Public URL',
    scriptAddress: 'Script address',
    boundAddress: 'Bound address',
    lan: (name: string) => `LAN (${name})`,
    apiBase: 'API base',
    windowScript: 'Widget script, window',
    overlayScript: 'Widget script, overlay',
    serverSide: 'On your server',
    serverSideHelp: 'The token, registering a video a user will upload (SourceFileGetType 1), and the widget’s values for your page.',
    pageSide: 'In your page',
    pageSideHelp: 'Load one widget script and call openUpload from a click (browsers block a pop-up opened otherwise), with the values your server computed.',
    kinds: { node: 'Node.js', php: 'PHP', python: 'Python', csharp: 'C#', window: 'Window', overlay: 'Overlay' },
  },
  settings: {
    title: 'Settings',
    formLabel: 'Server settings',
    savedIn: 'Saved in',
    intro1: 'Settings marked',
    intro2: 'change at once; the others are read when vop starts (',
    intro3: '). Flags given to',
    intro4: 'win over this file.',
    appliesNow: 'applies now',
    afterRestart: 'after restart',
    labels: settingLabels,
    addresses: 'Addresses',
    publicUrlHelp: 'Absolute base URL clients see in media, cover and widget addresses. Empty: the address each caller used.',
    scriptBaseUrlHelp: 'Where applications load the widget scripts from, ending in /. Empty: <public URL>/widget/.',
    portHelpDesktop: 'On the desktop the port is a setting of the app (below).',
    portHelp: 'TCP port. Empty: the one given at start (--port, VOP_PORT).',
    dataFolder: 'Data folder',
    dataFolderHelp: (chosenBy: string) => `Database, media and the admin token. Chosen at start (${chosenBy}); this file lives in it.`,
    dataFolderDesktop: 'the desktop settings below',
    transcoding: 'Transcoding',
    ladderHelp: 'Each source is transcoded to every rung its size reaches (never upscaled). A rung is named by the picture’s shorter side.',
    rungLabel: 'Label',
    rungShortSide: 'Shorter side (px)',
    rungKbps: 'Video kbps',
    remove: 'Remove',
    rungLabelAria: (n: number) => `Rung ${n} label`,
    rungShortSideAria: (n: number) => `Rung ${n} shorter side`,
    rungKbpsAria: (n: number) => `Rung ${n} video kbps`,
    removeRungAria: (name: string) => `Remove rung ${name}`,
    addRung: 'Add a rung',
    audioHelp: 'AAC bitrate of every rendition, kbps.',
    sizeLimits: 'Size limits (MB)',
    sizeNow: (size: string) => `Now ${size}.`,
    pullPolicy: 'Pull policy',
    pullIntro:
      'Pulls reach addresses on your LAN and on the internet. This machine (loopback: 127.0.0.0/8, ::1) and link-local addresses (169.254.0.0/16, fe80::/10) are refused unless a network below allows them; multicast and cloud metadata addresses are always refused. One network per line, e.g.',
    pullAllowHelp: 'Loopback or link-local networks pulls may reach, e.g. 127.0.0.0/8 for a file server on this machine. Other networks are allowed already: listing them changes nothing.',
    pullDenyHelp: 'A source’s address must be in none of these (to keep pulls off a part of your LAN).',
    perApp: 'Limits per application',
    registrationsHelp: 'Videos one application may register in a minute (a burst of that many, then evenly). 0: no limit.',
    quotaHelp: 'Videos one application may have, deleted ones not counted. 0: no quota.',
    workAtOnce: 'Work at once',
    transcodesHelp: 'ffmpeg runs at once. One already uses every core.',
    downloadsHelp: 'Pulls from a URL at once.',
    save: 'Save settings',
    undo: 'Undo changes',
    nothingChanged: 'Nothing changed.',
    notSaved: (label: string) => `Not saved: ${label} has a value vop cannot take (see the field).`,
    saved: 'Saved.',
    appliedNow: (names: string) => `Applied now: ${names}.`,
    takesEffectAfterRestart: (names: string) => `Takes effect after a restart: ${names}.`,
    pending: (value: string) => ` Saved; vop still runs with ${value} until it restarts.`,
    items: (n: number) => `${n} item${n === 1 ? '' : 's'}`,
    theDefault: 'the default',
    /** A refused value, next to its field. */
    problem: (p: SettingProblem, rung?: number, part?: string): string => {
      const where = rung === undefined ? '' : `Rung ${rung + 1}${part ? ` (${rungParts[part] ?? part})` : ''}: `;
      switch (p.rule) {
        case 'url':
          return `${where}Enter an absolute address starting with http:// or https://, or leave it empty.`;
        case 'whole':
          return `${where}Enter a whole number ${p.max !== undefined ? `from ${p.min ?? 0} to ${p.max}` : `of ${p.min ?? 0} or more`}.`;
        case 'positive':
          return `${where}Enter a number greater than 0.`;
        case 'cidr':
          return `“${p.value ?? ''}” is not a network. Write one per line, like 127.0.0.0/8 or fd00::/8.`;
        case 'rungCount':
          return `The ladder needs from ${p.min} to ${p.max} rungs.`;
        case 'label':
          return `${where}“${p.value ?? ''}” cannot name files: use letters, digits, _ or - (up to 32, starting with a letter or digit).`;
        case 'twice':
          return `${where}“${p.value ?? ''}” is used by another rung too.`;
        case 'even':
          return `${where}Enter an even whole number of at least 2 (the encoder needs even sizes).`;
        case 'unknown':
          return 'This is not a setting.';
      }
    },
  },
};

/** The shape every catalogue has: the English one's. */
export type Messages = typeof en;
