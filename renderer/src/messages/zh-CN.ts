/**
 * 控制台的简体中文文案：与 messages/en.ts 键完全相同（类型即英文目录的类型），
 * test/console-i18n.test.ts 检查两者一致。
 */
import type { SettingProblem } from '../../../server/services/settingProblem.js';
import type { Messages } from './en.js';

const rungParts: Record<string, string> = { label: '名称', shortSide: '短边', videoBitrateKbps: '视频码率' };

export const zhCN: Messages = {
  common: {
    listSeparator: '、',
    cancel: '取消',
  },
  status: {
    names: {
      0: '等待删除',
      1: '正常（可播放）',
      2: '等待下载',
      3: '下载中',
      4: '下载失败',
      5: '等待转码',
      6: '转码中',
      7: '转码失败',
      8: '未上传',
    },
    unknown: (s: number) => `状态 ${s}`,
  },
  time: {
    eta: (h: number, m: number, s: number) => (h > 0 ? `${h} 小时 ${m} 分` : m > 0 ? `${m} 分 ${s} 秒` : `${s} 秒`),
    stalled: '停滞',
  },
  jobs: {
    types: { transcode: '转码', download: '下载' },
    attempt: (n: number, of: number) => `第 ${n} 次尝试，共 ${of} 次`,
    progressOf: (what: string) => `${what}进度`,
  },
  video: {
    crumb: '视频',
    title: '视频',
    noTitle: '（无标题）',
    retry: '重试',
    retriedDownload: '下载已重新开始。',
    retriedTranscode: '视频已重新加入转码队列。',
    delete: '删除',
    deleteTitle: '删除这个视频？',
    deleteConfirm: '删除视频',
    deleteExplain: '它的源文件、转码版本和封面将被永久删除。记录保留在状态 0（等待删除），以便应用了解它的去向。',
    deleted: '已删除：视频处于状态 0（等待删除），文件已移除。',
    play: '播放',
    deletedNote: '此视频已删除：源文件、转码版本和封面都已移除。记录及其历史保留在状态 0。',
    deletedCovers: '已删除：不再有封面。',
    notPlayable: (status: number, name: string) => `只有状态为 1 的视频才提供文件；它当前为 ${status}（${name}）。`,
    noRendition: '还没有转码版本。',
    fields: '字段',
    status: '状态',
    id: 'Id',
    idWhat: '视频 id',
    application: '应用',
    uploader: '上传者',
    source: '来源',
    length: '时长',
    registered: '登记时间',
    description: '描述',
    tags: '标签',
    actors: '演员',
    covers: '封面',
    coverOf: (title: string) => `${title} 的封面`,
    noCover: '还没有封面。',
    renditions: '转码版本',
    rLabel: '版本',
    rSize: '画面',
    rBitrate: '码率',
    rBytes: '文件大小',
    rLinks: '链接',
    kbps: (n: string) => `${n} kbps`,
    open: '打开',
    download: '下载',
    hls: 'HLS 主播放列表：',
    hlsWhat: 'HLS 地址',
    jobs: '任务',
    noJob: '没有任务。',
    history: '状态历史',
    hWhen: '时间',
    hFrom: '从',
    hTo: '到',
    hReason: '原因',
    registeredState: '已登记',
    share: '分享',
    shareHelp: '任何人都能打开观看此视频的链接（所选清晰度的 MP4；自动时为最高清晰度）。',
    shareWhat: '分享链接',
    embed: '嵌入',
    embedHelp: '用于其他网站的纯 HTML：支持 HLS 的浏览器播放自适应流，其他浏览器播放 MP4；封面作为海报。',
    embedWhat: '嵌入代码',
    pulledFrom: (url: string) => `从 ${url} 拉取`,
    toBeUploaded: '待上传（尚未收到任何内容）',
    uploaded: '已上传（通过上传控件或 POST /Api/Video/Upload）',
  },
  player: {
    label: (title: string) => `播放 ${title}`,
    quality: '清晰度',
    auto: '自动（自适应，HLS）',
    rendition: (label: string, width: number, height: number) => `${label} · ${width}×${height}（MP4）`,
    engines: { native: 'HLS，由浏览器播放', 'hls.js': 'HLS，由 hls.js 播放', mp4: '单个 MP4 版本' },
    hlsFailed: (details: string) => `无法播放 HLS 流（${details}）。请改选一个 MP4 清晰度。`,
  },
  integrate: {
    title: '接入',
    intro:
      '你的应用在其服务器上用 AppId、Timestamp 和 Token（Timestamp 后接 AppSecret 的 MD5）调用 vop，并通过上传控件脚本让用户在应用自己的页面上上传。下面的代码已填入本应用的 AppId；AppSecret 从环境变量 VOP_APP_SECRET 读取。',
    addressLabel: '应用访问 vop 所用的地址',
    thisMachine: '本机',
    publicUrl: '公开地址',
    scriptAddress: '脚本地址',
    boundAddress: '绑定地址',
    lan: (name: string) => `局域网（${name}）`,
    apiBase: 'API 基础地址',
    windowScript: '上传控件脚本（窗口）',
    overlayScript: '上传控件脚本（浮层）',
    serverSide: '在你的服务器上',
    serverSideHelp: '计算令牌、登记一个由用户上传的视频（SourceFileGetType 1），以及生成页面所需的控件参数。',
    pageSide: '在你的页面中',
    pageSideHelp: '加载一个上传控件脚本，并在点击事件中调用 openUpload（否则浏览器会拦截弹出窗口），参数由你的服务器计算。',
    kinds: { node: 'Node.js', php: 'PHP', python: 'Python', csharp: 'C#', window: '窗口', overlay: '浮层' },
  },
  settings: {
    title: '设置',
    formLabel: '服务器设置',
    savedIn: '保存在',
    intro1: '标有',
    intro2: '的设置立即生效；其余设置在 vop 启动时读取（',
    intro3: '）。传给',
    intro4: '的参数优先于此文件。',
    appliesNow: '立即生效',
    afterRestart: '重启后生效',
    labels: {
      publicUrl: '公开地址',
      scriptBaseUrl: '脚本地址',
      port: '端口',
      ladderRungs: '转码档位',
      audioBitrateKbps: '音频码率',
      maxUploadBytesFlash: 'flash 上传上限',
      maxUploadBytesSilverlight: 'silverlight 上传上限',
      multipartMaxBytes: '服务端上传上限',
      pullMaxBytes: '拉取文件上限',
      pullAllow: '拉取：允许的网络',
      pullDeny: '拉取：禁止的网络',
      registrationsPerMinute: '每分钟登记数',
      maxVideosPerApp: '每个应用的视频数',
      transcodeConcurrency: '同时转码数',
      downloadConcurrency: '同时下载数',
    },
    addresses: '地址',
    publicUrlHelp: '客户端在媒体、封面和上传控件地址中看到的绝对基础地址。留空：使用每个调用方所用的地址。',
    scriptBaseUrlHelp: '应用加载上传控件脚本的地址，以 / 结尾。留空：<公开地址>/widget/。',
    portHelpDesktop: '桌面版的端口是应用自身的设置（见下方）。',
    portHelp: 'TCP 端口。留空：使用启动时给定的端口（--port、VOP_PORT）。',
    dataFolder: '数据目录',
    dataFolderHelp: (chosenBy: string) => `数据库、媒体文件和管理令牌。启动时选定（${chosenBy}）；此文件也在其中。`,
    dataFolderDesktop: '下方的桌面版设置',
    transcoding: '转码',
    ladderHelp: '每个源视频会转码为其尺寸能达到的每一档（从不放大）。档位以画面短边命名。',
    rungLabel: '名称',
    rungShortSide: '短边（像素）',
    rungKbps: '视频 kbps',
    remove: '删除',
    rungLabelAria: (n: number) => `第 ${n} 档名称`,
    rungShortSideAria: (n: number) => `第 ${n} 档短边`,
    rungKbpsAria: (n: number) => `第 ${n} 档视频 kbps`,
    removeRungAria: (name: string) => `删除档位 ${name}`,
    addRung: '添加一档',
    audioHelp: '每个转码版本的 AAC 码率，kbps。',
    sizeLimits: '大小上限（MB）',
    sizeNow: (size: string) => `当前 ${size}。`,
    pullPolicy: '拉取策略',
    pullIntro:
      '拉取可访问局域网和互联网上的地址。本机（回环：127.0.0.0/8、::1）和链路本地地址（169.254.0.0/16、fe80::/10）会被拒绝，除非下方允许的网络包含它们；组播和云元数据地址始终拒绝。每行一个网络，例如',
    pullAllowHelp: '允许拉取访问的回环或链路本地网络，例如本机上的文件服务器用 127.0.0.0/8。其他网络本就允许，列在这里不起作用。',
    pullDenyHelp: '源地址不得属于其中任何一个（让拉取避开局域网的某一部分）。',
    perApp: '每个应用的限制',
    registrationsHelp: '一个应用每分钟可登记的视频数（先允许一次性登记这么多，之后匀速）。0：不限。',
    quotaHelp: '一个应用可拥有的视频数，已删除的不计。0：不限。',
    workAtOnce: '并发',
    transcodesHelp: '同时运行的 ffmpeg 数。一个已占满所有核心。',
    downloadsHelp: '同时从 URL 拉取的数量。',
    save: '保存设置',
    undo: '撤销更改',
    nothingChanged: '没有更改。',
    notSaved: (label: string) => `未保存：${label} 的值无法使用（见该字段）。`,
    saved: '已保存。',
    appliedNow: (names: string) => `已立即生效：${names}。`,
    takesEffectAfterRestart: (names: string) => `重启后生效：${names}。`,
    pending: (value: string) => ` 已保存；在重启前 vop 仍使用 ${value}。`,
    items: (n: number) => `${n} 项`,
    theDefault: '默认值',
    problem: (p: SettingProblem, rung?: number, part?: string): string => {
      const where = rung === undefined ? '' : `第 ${rung + 1} 档${part ? `（${rungParts[part] ?? part}）` : ''}：`;
      switch (p.rule) {
        case 'url':
          return `${where}请输入以 http:// 或 https:// 开头的绝对地址，或留空。`;
        case 'whole':
          return `${where}请输入${p.max !== undefined ? ` ${p.min ?? 0} 到 ${p.max} 之间的` : `不小于 ${p.min ?? 0} 的`}整数。`;
        case 'positive':
          return `${where}请输入大于 0 的数。`;
        case 'cidr':
          return `“${p.value ?? ''}”不是网络。每行写一个，例如 127.0.0.0/8 或 fd00::/8。`;
        case 'rungCount':
          return `转码档位需要 ${p.min} 到 ${p.max} 档。`;
        case 'label':
          return `${where}“${p.value ?? ''}”不能用作文件名：请使用字母、数字、_ 或 -（最多 32 个，以字母或数字开头）。`;
        case 'twice':
          return `${where}“${p.value ?? ''}”已被另一档使用。`;
        case 'even':
          return `${where}请输入不小于 2 的偶数（编码器需要偶数尺寸）。`;
        case 'unknown':
          return '这不是一项设置。';
      }
    },
  },
};
