/**
 * Ready-to-paste code for one application (issue 13, item 2): the server side (the spec's
 * section 5 token, registering a video, the widget's values) in Node, PHP, Python and C#, and the
 * page side (the widget script and its `openUpload` call) for both widget forms. Filled with the
 * application's AppId and the addresses it should use; the AppSecret is read from the
 * environment (VOP_APP_SECRET): the console never has it after it was shown once.
 *
 * Spec section 5: `Token` is the MD5 of `<Timestamp><AppSecret>` (UTF-8), 32 lowercase hex
 * characters; Timestamp is Unix seconds, within 600 s of vop's clock. Code is code: it is not
 * translated (the page around it is).
 */

/** What the snippets are filled with. */
export interface SnippetValues {
  /** The application's AppId. */
  appId: string;
  /** The application's name, for the first comment. */
  appName: string;
  /** The spec API's base, `<base>/Api/Video`. */
  apiBase: string;
  /** `<script base>initUploadWidget.js` (window form). */
  windowScript: string;
  /** `<script base>initUploadABoxWidget.js` (overlay form). */
  overlayScript: string;
}

export type SnippetKind = 'node' | 'php' | 'python' | 'csharp' | 'window' | 'overlay';

/** A string literal for JavaScript, C# and Python (JSON's escapes are valid in all three for these values). */
const lit = (s: string) => JSON.stringify(s);
/** A single-quoted PHP string literal. */
const phpLit = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
/** A name inside a one-line comment. */
const commentSafe = (s: string) => s.replace(/[\r\n]+/g, ' ').replace(/\*\//g, '* /');

function node(v: SnippetValues): string {
  return `// Node.js 18+: your server's side of vop for "${commentSafe(v.appName)}" (spec sections 4.2, 4.5 and 5).
// Run it as it stands to register a video and print its VideoId:
//   VOP_APP_SECRET=<AppSecret> node vop.mjs "A first video"
// or import registerVideo and widgetValues from it in your server.
import crypto from 'node:crypto';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const VOP_API = ${lit(v.apiBase)};
const APP_ID = ${lit(v.appId)};
// The AppSecret stays on your server, never in a page: it comes from the environment.
const APP_SECRET = process.env.VOP_APP_SECRET;
if (!APP_SECRET) {
  console.error('VOP_APP_SECRET is not set: set it to the AppSecret vop showed when the application was created (the console can issue a new one).');
  process.exit(1);
}

/** AppId, Timestamp and Token: Token = lowercase hex MD5 of Timestamp followed by the AppSecret. */
export function vopAuth() {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const token = crypto.createHash('md5').update(timestamp + APP_SECRET, 'utf8').digest('hex');
  return { AppId: APP_ID, Timestamp: timestamp, Token: token };
}

/** Registers a video that a user will upload with the widget; resolves with its VideoId. */
export async function registerVideo(title, createUser = '') {
  const res = await fetch(\`\${VOP_API}/Post\`, {
    method: 'POST',
    body: new URLSearchParams({ ...vopAuth(), VideoTitle: title, CreateUser: createUser, SourceFileGetType: '1' }),
  });
  const data = await res.json();
  if (data.AuthMsg.ResultCode !== '1') throw new Error(\`vop: \${data.AuthMsg.ResultCode} \${data.AuthMsg.ResultMessage}\`);
  return data.VideoId;
}

/** The upload widget's options for that video: compute them when you render the page (valid 600 s). */
export function widgetValues(videoId) {
  const { AppId, Timestamp, Token } = vopAuth();
  return { appId: AppId, timestamp: Timestamp, token: Token, videoId };
}

// Run directly (not imported): register one video and print its VideoId.
if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) {
  try {
    console.log(await registerVideo(process.argv[2] || 'A first video', process.argv[3] || ''));
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
`;
}

function php(v: SnippetValues): string {
  return `<?php
// PHP 7+: your server's side of vop for "${commentSafe(v.appName)}" (spec sections 4.2, 4.5 and 5).
const VOP_API = ${phpLit(v.apiBase)};
const VOP_APP_ID = ${phpLit(v.appId)};

/** AppId, Timestamp and Token: Token = lowercase hex MD5 of Timestamp followed by the AppSecret. */
function vop_auth(): array
{
    $secret = getenv('VOP_APP_SECRET'); // the AppSecret stays on your server, never in a page
    $timestamp = (string) time();
    return ['AppId' => VOP_APP_ID, 'Timestamp' => $timestamp, 'Token' => md5($timestamp . $secret)];
}

/** Registers a video that a user will upload with the widget; returns its VideoId. */
function vop_register_video(string $title, string $createUser = ''): string
{
    $form = vop_auth() + ['VideoTitle' => $title, 'CreateUser' => $createUser, 'SourceFileGetType' => '1'];
    $context = stream_context_create(['http' => [
        'method' => 'POST',
        'header' => "Content-Type: application/x-www-form-urlencoded\\r\\n",
        'content' => http_build_query($form),
    ]]);
    $data = json_decode(file_get_contents(VOP_API . '/Post', false, $context), true);
    if ($data['AuthMsg']['ResultCode'] !== '1') {
        throw new RuntimeException('vop: ' . $data['AuthMsg']['ResultCode'] . ' ' . $data['AuthMsg']['ResultMessage']);
    }
    return $data['VideoId'];
}

/** The upload widget's options for that video: compute them when you render the page (valid 600 s). */
function vop_widget_values(string $videoId): array
{
    $auth = vop_auth();
    return ['appId' => $auth['AppId'], 'timestamp' => $auth['Timestamp'], 'token' => $auth['Token'], 'videoId' => $videoId];
}
`;
}

function python(v: SnippetValues): string {
  return `# Python 3: your server's side of vop for "${commentSafe(v.appName)}" (spec sections 4.2, 4.5 and 5).
import hashlib
import json
import os
import time
import urllib.parse
import urllib.request

VOP_API = ${lit(v.apiBase)}
APP_ID = ${lit(v.appId)}
# The AppSecret stays on your server, never in a page.
APP_SECRET = os.environ['VOP_APP_SECRET']


def vop_auth():
    """AppId, Timestamp and Token: Token = lowercase hex MD5 of Timestamp followed by the AppSecret."""
    timestamp = str(int(time.time()))
    token = hashlib.md5((timestamp + APP_SECRET).encode('utf-8')).hexdigest()
    return {'AppId': APP_ID, 'Timestamp': timestamp, 'Token': token}


def register_video(title, create_user=''):
    """Registers a video that a user will upload with the widget; returns its VideoId."""
    form = dict(vop_auth(), VideoTitle=title, CreateUser=create_user, SourceFileGetType='1')
    body = urllib.parse.urlencode(form).encode('utf-8')
    with urllib.request.urlopen(VOP_API + '/Post', data=body) as res:
        data = json.load(res)
    if data['AuthMsg']['ResultCode'] != '1':
        raise RuntimeError('vop: %s %s' % (data['AuthMsg']['ResultCode'], data['AuthMsg']['ResultMessage']))
    return data['VideoId']


def widget_values(video_id):
    """The upload widget's options for that video: compute them when you render the page (valid 600 s)."""
    auth = vop_auth()
    return {'appId': auth['AppId'], 'timestamp': auth['Timestamp'], 'token': auth['Token'], 'videoId': video_id}
`;
}

function csharp(v: SnippetValues): string {
  return `// C# (.NET 6+; on .NET Framework 4.6.1+ add the System.Text.Json package): your server's side of vop
// for "${commentSafe(v.appName)}" (spec sections 4.2, 4.5 and 5).
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Net.Http;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using System.Threading.Tasks;

public static class Vop
{
    public const string Api = ${lit(v.apiBase)};
    public const string AppId = ${lit(v.appId)};
    // The AppSecret stays on your server, never in a page.
    static readonly string AppSecret = Environment.GetEnvironmentVariable("VOP_APP_SECRET");
    static readonly HttpClient Http = new HttpClient();

    /// <summary>AppId, Timestamp and Token: Token = lowercase hex MD5 of Timestamp followed by the AppSecret.</summary>
    public static Dictionary<string, string> Auth()
    {
        string timestamp = DateTimeOffset.UtcNow.ToUnixTimeSeconds().ToString(CultureInfo.InvariantCulture);
        using (var md5 = MD5.Create())
        {
            byte[] hash = md5.ComputeHash(Encoding.UTF8.GetBytes(timestamp + AppSecret));
            string token = BitConverter.ToString(hash).Replace("-", "").ToLowerInvariant();
            return new Dictionary<string, string> { { "AppId", AppId }, { "Timestamp", timestamp }, { "Token", token } };
        }
    }

    /// <summary>Registers a video that a user will upload with the widget; returns its VideoId.</summary>
    public static async Task<string> RegisterVideoAsync(string title, string createUser = "")
    {
        var form = Auth();
        form["VideoTitle"] = title;
        form["CreateUser"] = createUser;
        form["SourceFileGetType"] = "1";
        var res = await Http.PostAsync(Api + "/Post", new FormUrlEncodedContent(form));
        using (var doc = JsonDocument.Parse(await res.Content.ReadAsStringAsync()))
        {
            var authMsg = doc.RootElement.GetProperty("AuthMsg");
            string code = authMsg.GetProperty("ResultCode").GetString();
            if (code != "1") throw new InvalidOperationException("vop: " + code + " " + authMsg.GetProperty("ResultMessage").GetString());
            return doc.RootElement.GetProperty("VideoId").GetString();
        }
    }

    /// <summary>The upload widget's options for that video: compute them when you render the page (valid 600 s).</summary>
    public static Dictionary<string, string> WidgetValues(string videoId)
    {
        var auth = Auth();
        return new Dictionary<string, string> { { "appId", AppId }, { "timestamp", auth["Timestamp"] }, { "token", auth["Token"] }, { "videoId", videoId } };
    }
}
`;
}

/** The host page's part (README "Upload widgets"): one script, `openUpload` from a click. */
function page(v: SnippetValues, form: 'window' | 'overlay'): string {
  const script = form === 'window' ? v.windowScript : v.overlayScript;
  const extra =
    form === 'overlay'
      ? `
      // Where the layer goes (default: centred, over the top window):
      // left: '120px', top: '10%', isTop: true,`
      : '';
  return `<button id="upload" type="button">Upload a video</button>
<script src=${lit(script)}></script>
<script>
  // Rendered by your server with widgetValues(videoId) (above) for the VideoId registration returned.
  var values = { appId: ${lit(v.appId)}, timestamp: "TIMESTAMP", token: "TOKEN", videoId: "VIDEO_ID" };
  document.getElementById('upload').addEventListener('click', function () {
    openUpload({
      appId: values.appId, timestamp: values.timestamp, token: values.token, videoId: values.videoId,
      uploadType: 'flash', // or 'silverlight' for files up to 6 GB${extra}
      onSuccess: function (videoId) { /* stored, and a video: tell your server; transcoding follows */ },
      onFailure: function (reason, detail) {
        if (detail && detail.cancelled) return; // the user closed it without a file
        /* detail.code, detail.message: what the page showed, e.g. "307", "Not A Video: …" */
      },
      onError: function (reason) { /* the network failed; the upload resumes when the user carries on */ },
    });
  });
</script>
`;
}

/** Every snippet for one application. */
export function integrationSnippets(v: SnippetValues): Record<SnippetKind, string> {
  return { node: node(v), php: php(v), python: python(v), csharp: csharp(v), window: page(v, 'window'), overlay: page(v, 'overlay') };
}

/** What an embed snippet is made of: the video's addresses and its picture's shape. */
export interface EmbedValues {
  /** The HLS master, or '' when the video has no HLS. */
  hlsUrl: string;
  /** An MP4 rendition: what browsers without HLS play. */
  mp4Url: string;
  /** The cover, as the player's poster ('' for none). */
  coverUrl: string;
  width: number;
  height: number;
}

/** Text safe inside a double-quoted HTML attribute. */
const attr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/**
 * A `<video>` for another site's page: the HLS master first (Safari, iOS, Android and browsers
 * with HLS of their own play it adaptively), the MP4 for the others, the cover as poster. Plain
 * HTML: no script of vop's runs on the host page.
 */
export function embedSnippet(v: EmbedValues): string {
  const width = 640;
  const height = v.width > 0 && v.height > 0 ? Math.round((width * v.height) / v.width / 2) * 2 : 360;
  const poster = v.coverUrl ? ` poster="${attr(v.coverUrl)}"` : '';
  const hls = v.hlsUrl ? `\n  <source src="${attr(v.hlsUrl)}" type="application/vnd.apple.mpegurl">` : '';
  return `<video controls playsinline preload="metadata" width="${width}" height="${height}"${poster} style="max-width: 100%; height: auto">${hls}
  <source src="${attr(v.mp4Url)}" type="video/mp4">
</video>
`;
}
