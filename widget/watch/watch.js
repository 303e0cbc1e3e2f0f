/*
 * vop's watch page player (server/watch/watchPage.ts; docs/watch.md). The browser's own <video>
 * controls (keyboard, touch, fullscreen come with them) and a menu for quality, captions and
 * audio tracks. Adaptive playback with hls.js where the browser has Media Source Extensions
 * (its levels are the quality menu), else the browser's own HLS, else the largest MP4.
 * Captions are <track> elements of the video's WebVTT files, so every engine shows the same ones.
 */
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('vop-watch-data').textContent);
  var v = data.video;
  var o = data.options;
  var t = data.text;
  var root = document.getElementById('vop-watch');
  var video = document.getElementById('vop-video');
  var tools = document.getElementById('vop-tools');
  var menuButton = document.getElementById('vop-menu-button');
  var menu = document.getElementById('vop-menu');
  var errorBox = document.getElementById('vop-error');
  var hls = null;
  /** 'hls.js', 'native' or 'mp4': what plays, for the menu and for tests (data-engine). */
  var engine = '';

  video.muted = !!o.muted;
  video.loop = !!o.loop;
  if ('ontouchstart' in window) root.classList.add('vop-touch');

  function togglePlay() {
    if (video.paused) video.play(); else video.pause();
  }

  function toggleFullscreen() {
    if (document.fullscreenElement) document.exitFullscreen(); else if (root.requestFullscreen) root.requestFullscreen();
  }

  function showError() {
    errorBox.textContent = t.playbackError;
    errorBox.hidden = false;
  }

  function addCaptionTracks() {
    v.captions.forEach(function (c) {
      var track = document.createElement('track');
      track.kind = 'captions';
      track.src = c.url;
      track.srclang = c.language;
      track.label = c.label;
      track.setAttribute('data-id', c.id);
      video.appendChild(track);
    });
    if (v.chaptersUrl) {
      var chapters = document.createElement('track');
      chapters.kind = 'chapters';
      chapters.src = v.chaptersUrl;
      video.appendChild(chapters);
    }
  }

  function captionTracks() {
    var out = [];
    for (var i = 0; i < video.textTracks.length; i++) {
      var tt = video.textTracks[i];
      if (tt.kind === 'captions' || tt.kind === 'subtitles') out.push(tt);
    }
    return out;
  }

  function showCaptions(track) {
    captionTracks().forEach(function (tt) {
      tt.mode = tt === track ? 'showing' : 'disabled';
    });
    buildMenu();
  }

  function chooseCaptions() {
    if (!o.captions) return;
    var wanted = o.captions.toLowerCase();
    var tracks = captionTracks();
    var found = tracks.filter(function (tt) { return (tt.language || '').toLowerCase() === wanted; })[0] ||
      tracks.filter(function (tt) { return (tt.language || '').toLowerCase().indexOf(wanted.split('-')[0]) === 0; })[0];
    if (found) showCaptions(found);
  }

  function item(label, checked, act) {
    var b = document.createElement('button');
    b.type = 'button';
    b.setAttribute('role', 'menuitemradio');
    b.setAttribute('aria-checked', checked ? 'true' : 'false');
    b.textContent = label;
    b.addEventListener('click', function () {
      act();
      closeMenu();
    });
    return b;
  }

  function section(title, items) {
    if (items.length === 0) return;
    var h = document.createElement('h2');
    h.textContent = title;
    menu.appendChild(h);
    items.forEach(function (b) { menu.appendChild(b); });
  }

  function buildMenu() {
    menu.textContent = '';
    if (hls && hls.levels && hls.levels.length > 1) {
      var levels = hls.levels.map(function (l, i) { return { l: l, i: i }; }).sort(function (a, b) { return b.l.height - a.l.height || b.l.bitrate - a.l.bitrate; });
      section(t.quality, [item(t.auto, hls.autoLevelEnabled, function () { hls.currentLevel = -1; })].concat(levels.map(function (x) {
        return item((x.l.height ? x.l.height + 'p' : Math.round(x.l.bitrate / 1000) + ' kbps'), !hls.autoLevelEnabled && hls.currentLevel === x.i, function () { hls.currentLevel = x.i; });
      })));
    }
    var tracks = captionTracks();
    if (tracks.length > 0) {
      var showing = tracks.filter(function (tt) { return tt.mode === 'showing'; })[0];
      section(t.captions, [item(t.off, !showing, function () { showCaptions(null); })].concat(tracks.map(function (tt) {
        return item(tt.label || tt.language, tt === showing, function () { showCaptions(tt); });
      })));
    }
    if (hls && hls.audioTracks && hls.audioTracks.length > 1) {
      section(t.audio, hls.audioTracks.map(function (a, i) {
        return item(a.name || a.lang || String(i + 1), hls.audioTrack === i, function () { hls.audioTrack = i; });
      }));
    } else if (!hls && video.audioTracks && video.audioTracks.length > 1) {
      var list = [];
      for (var i = 0; i < video.audioTracks.length; i++) {
        (function (a) {
          list.push(item(a.label || a.language || String(i + 1), a.enabled, function () {
            for (var j = 0; j < video.audioTracks.length; j++) video.audioTracks[j].enabled = video.audioTracks[j] === a;
          }));
        })(video.audioTracks[i]);
      }
      section(t.audio, list);
    }
    tools.hidden = !o.controls || menu.childNodes.length === 0;
  }

  function openMenu() {
    buildMenu();
    menu.hidden = false;
    tools.classList.add('vop-open');
    menuButton.setAttribute('aria-expanded', 'true');
    var first = menu.querySelector('button');
    if (first) first.focus();
  }

  function closeMenu() {
    menu.hidden = true;
    tools.classList.remove('vop-open');
    menuButton.setAttribute('aria-expanded', 'false');
  }

  menuButton.addEventListener('click', function () {
    if (menu.hidden) openMenu();
    else closeMenu();
  });
  document.addEventListener('click', function (e) {
    if (!menu.hidden && !tools.contains(e.target)) closeMenu();
  });

  // Keys as the common players have them, when the menu does not hold the focus.
  document.addEventListener('keydown', function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === 'Escape') return closeMenu();
    if (tools.contains(document.activeElement)) return;
    var k = e.key;
    // A focused button acts on its own key.
    if (document.activeElement && document.activeElement.tagName === 'BUTTON' && (k === ' ' || k === 'Enter')) return;
    if (k === ' ' || k === 'k') {
      togglePlay();
    } else if (k === 'ArrowLeft' || k === 'j') {
      video.currentTime = Math.max(0, video.currentTime - (k === 'j' ? 10 : 5));
    } else if (k === 'ArrowRight' || k === 'l') {
      video.currentTime = Math.min(video.duration || Infinity, video.currentTime + (k === 'l' ? 10 : 5));
    } else if (k === 'm') {
      video.muted = !video.muted;
    } else if (k === 'f') {
      toggleFullscreen();
    } else if (k === 'c') {
      var tracks = captionTracks();
      var on = tracks.filter(function (tt) { return tt.mode === 'showing'; })[0];
      showCaptions(on ? null : tracks[0] || null);
    } else return;
    e.preventDefault();
  });

  // A click on the picture plays and pauses (with or without the controls).
  video.addEventListener('click', togglePlay);

  function clock(seconds) {
    var s = Math.max(0, Math.floor(seconds || 0));
    var h = Math.floor(s / 3600);
    var m = Math.floor((s % 3600) / 60);
    var r = ('0' + (s % 60)).slice(-2);
    return h > 0 ? h + ':' + ('0' + m).slice(-2) + ':' + r : m + ':' + r;
  }

  // The controls (server/watch/watchPage.ts): play, the seek bar and its preview tile, the time,
  // sound, fullscreen. Shown while paused, under the pointer, with the focus, or on touch screens.
  var controls = document.getElementById('vop-controls');
  if (controls) {
    var playButton = document.getElementById('vop-play');
    var seek = document.getElementById('vop-seek');
    var played = document.getElementById('vop-played');
    var timeText = document.getElementById('vop-time');
    var muteButton = document.getElementById('vop-mute');
    var fullButton = document.getElementById('vop-full');
    var preview = document.getElementById('vop-preview');
    var tile = document.getElementById('vop-preview-tile');
    var previewTime = document.getElementById('vop-preview-time');
    var showState = function () {
      playButton.innerHTML = video.paused ? '&#9654;' : '&#10074;&#10074;';
      playButton.setAttribute('aria-label', video.paused ? t.play : t.pause);
      muteButton.innerHTML = video.muted ? '&#128263;' : '&#128264;';
      muteButton.setAttribute('aria-label', video.muted ? t.unmute : t.mute);
      var d = video.duration || v.duration || 0;
      played.style.width = d > 0 ? Math.min(100, (video.currentTime / d) * 100) + '%' : '0';
      timeText.textContent = clock(video.currentTime) + ' / ' + clock(d);
      seek.setAttribute('aria-valuemax', String(Math.round(d)));
      seek.setAttribute('aria-valuenow', String(Math.round(video.currentTime)));
      seek.setAttribute('aria-valuetext', clock(video.currentTime));
      root.classList.toggle('vop-paused', video.paused);
    };
    ['play', 'pause', 'timeupdate', 'durationchange', 'volumechange', 'loadedmetadata', 'seeked'].forEach(function (e) { video.addEventListener(e, showState); });
    showState();
    playButton.addEventListener('click', togglePlay);
    muteButton.addEventListener('click', function () { video.muted = !video.muted; });
    fullButton.addEventListener('click', toggleFullscreen);

    var timeAt = function (clientX) {
      var r = seek.getBoundingClientRect();
      var f = Math.min(1, Math.max(0, (clientX - r.left) / Math.max(1, r.width)));
      return { t: f * (video.duration || v.duration || 0), x: clientX - r.left, width: r.width };
    };
    var dragging = false;
    seek.addEventListener('pointerdown', function (e) {
      dragging = true;
      if (seek.setPointerCapture) seek.setPointerCapture(e.pointerId);
      video.currentTime = timeAt(e.clientX).t;
    });
    seek.addEventListener('pointerup', function () { dragging = false; });
    seek.addEventListener('pointercancel', function () { dragging = false; });

    // Seek previews: the storyboard's WebVTT (cues of `<sprite>#xywh=x,y,w,h`), read once.
    var cues = null;
    if (v.storyboardUrl) {
      fetch(v.storyboardUrl).then(function (r) { return r.ok ? r.text() : ''; }).then(function (text) {
        cues = [];
        var blocks = text.split(/\r?\n\r?\n/);
        blocks.forEach(function (b) {
          var m = /(\d+):(\d\d):(\d\d)\.(\d{3}) --> (\d+):(\d\d):(\d\d)\.(\d{3})\s*\n\s*([^#\s]+)#xywh=(\d+),(\d+),(\d+),(\d+)/.exec(b);
          if (!m) return;
          var at = function (i) { return +m[i] * 3600 + +m[i + 1] * 60 + +m[i + 2] + +m[i + 3] / 1000; };
          cues.push({ start: at(1), end: at(5), url: new URL(m[9], v.storyboardUrl).href, x: +m[10], y: +m[11], w: +m[12], h: +m[13] });
        });
        root.setAttribute('data-storyboard', String(cues.length));
      }).catch(function () { /* no previews: the seek bar works without them */ });
    }
    var showPreview = function (e) {
      var p = timeAt(e.clientX);
      if (dragging) video.currentTime = p.t;
      previewTime.textContent = clock(p.t);
      var cue = null;
      if (cues) for (var i = 0; i < cues.length; i++) if (p.t >= cues[i].start && p.t < cues[i].end) { cue = cues[i]; break; }
      if (cue) {
        tile.style.width = cue.w + 'px';
        tile.style.height = cue.h + 'px';
        tile.style.backgroundImage = 'url("' + cue.url + '")';
        tile.style.backgroundPosition = -cue.x + 'px ' + -cue.y + 'px';
        tile.hidden = false;
        tile.setAttribute('data-cue', cue.url.split('/').pop() + '#' + cue.x + ',' + cue.y);
      } else {
        tile.hidden = true;
      }
      preview.hidden = false;
      var w = preview.offsetWidth;
      preview.style.left = Math.min(Math.max(0, p.x - w / 2), Math.max(0, p.width - w)) + 'px';
    };
    seek.addEventListener('pointermove', showPreview);
    seek.addEventListener('pointerenter', showPreview);
    seek.addEventListener('pointerleave', function () { preview.hidden = true; });
  }

  function start() {
    root.setAttribute('data-engine', engine);
    if (o.start > 0 && engine !== 'hls.js') {
      video.addEventListener('loadedmetadata', function once() {
        video.removeEventListener('loadedmetadata', once);
        video.currentTime = o.start;
      });
    }
    video.addEventListener('error', showError);
    video.textTracks.addEventListener('addtrack', function () {
      chooseCaptions();
      buildMenu();
    });
    chooseCaptions();
    buildMenu();
    if (o.autoplay) {
      var p = video.play();
      // A browser refuses to start with sound unasked: start muted, as it allows.
      if (p && p.catch) p.catch(function () {
        if (video.muted) return;
        video.muted = true;
        video.play().catch(function () { /* the viewer presses play */ });
      });
    }
  }

  function withHlsJs() {
    engine = 'hls.js';
    // Captions come as <track>s: hls.js's own subtitle rendering stays off, so that none shows twice.
    hls = new window.Hls({ startPosition: o.start > 0 ? o.start : -1, capLevelToPlayerSize: true, enableWebVTT: false, enableIMSC1: false, enableCEA708Captions: false });
    hls.on(window.Hls.Events.MANIFEST_PARSED, buildMenu);
    hls.on(window.Hls.Events.LEVEL_SWITCHED, buildMenu);
    hls.on(window.Hls.Events.AUDIO_TRACKS_UPDATED, buildMenu);
    hls.on(window.Hls.Events.ERROR, function (_e, d) {
      if (d.fatal) showError();
    });
    hls.loadSource(v.hlsUrl);
    hls.attachMedia(video);
    addCaptionTracks();
    start();
  }

  // Views and watch time (docs/watch.md): the seconds played in this tab's session of the page
  // (sessionStorage: a reload goes on with the same session, and counts no second view), reported
  // every 10 s while it plays, and when it pauses, ends or the page goes away. No cookie.
  var sessionKey = 'vop-watch-' + v.id;
  var session = '';
  var watched = 0;
  try {
    var saved = JSON.parse(sessionStorage.getItem(sessionKey) || 'null');
    if (saved && typeof saved.s === 'string') {
      session = saved.s;
      watched = Number(saved.w) || 0;
    }
  } catch (e) { /* no storage: a session of this page alone */ }
  if (!session) {
    var bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    session = Array.prototype.map.call(bytes, function (b) { return ('0' + b.toString(16)).slice(-2); }).join('');
  }
  var lastTime = null;
  var reported = -1;
  video.addEventListener('timeupdate', function () {
    var now = video.currentTime;
    if (!video.paused && !video.seeking && lastTime !== null) {
      var step = now - lastTime;
      if (step > 0 && step < 1.5) watched += step;
    }
    lastTime = now;
    try { sessionStorage.setItem(sessionKey, JSON.stringify({ s: session, w: watched })); } catch (e) { /* kept in memory only */ }
  });
  video.addEventListener('seeking', function () { lastTime = null; });
  function report() {
    if (!data.viewsUrl || watched - reported < 0.5) return;
    reported = watched;
    var body = JSON.stringify({ s: session, w: Math.round(watched * 10) / 10 });
    if (navigator.sendBeacon && navigator.sendBeacon(data.viewsUrl, new Blob([body], { type: 'text/plain' }))) return;
    fetch(data.viewsUrl, { method: 'POST', body: body, keepalive: true, headers: { 'content-type': 'text/plain' } }).catch(function () { /* the next report carries it */ });
  }
  setInterval(function () { if (!video.paused) report(); }, 10000);
  video.addEventListener('pause', report);
  video.addEventListener('ended', report);
  document.addEventListener('visibilitychange', function () { if (document.visibilityState === 'hidden') report(); });
  window.addEventListener('pagehide', report);

  var hasMse = !!(window.MediaSource || window.ManagedMediaSource);
  if (v.hlsUrl && hasMse) {
    var s = document.createElement('script');
    s.src = data.hlsScript;
    s.onload = function () {
      if (window.Hls && window.Hls.isSupported()) withHlsJs();
      else native();
    };
    s.onerror = native;
    document.head.appendChild(s);
  } else {
    native();
  }

  function native() {
    if (v.hlsUrl && video.canPlayType('application/vnd.apple.mpegurl')) {
      // The master names its subtitle renditions: the browser lists them itself.
      engine = 'native';
      video.src = v.hlsUrl;
    } else {
      engine = 'mp4';
      video.src = v.mp4.length > 0 ? v.mp4[0].url : '';
      addCaptionTracks();
    }
    start();
  }
})();
