// hako viewer page: one WebSocket to hako-viewer. Text messages are JSON: the state (10 Hz, no
// channel values), the channel list (when it changes), the values of the channels this page
// watches (the rows it shows and the plotted one), the map's positions (when the map shows and
// the domain has many), command replies. Binary messages are Hakoniwa's v2 PDU frames (304-byte
// header + PDU), which the map asks for with DECLARE_READ as a Hakoniwa client does, when the
// domain has few position channels. Format: docs/viewer.md.
'use strict';
(function () {
  const query = new URLSearchParams(location.search);
  const token = query.get('token') || '';
  const action = query.get('action') || ''; // start|stop|reset once connected (tests, scripts)
  const $ = (id) => document.getElementById(id);
  const SVGNS = 'http://www.w3.org/2000/svg';
  const PALETTE = ['#4a76c9', '#d0602a', '#2e8b57', '#9b4ac9', '#c9a12a', '#2aa5c9', '#c92a6d',
    '#6d7a2a'];

  // v2 frame layout (hako/frame.h)
  const V2_HEADER = 304;
  const V2_MAGIC = 0x48414b4f;
  const PDU_DATA = 0x42555043;
  const DECLARE_READ = 0x52455044;

  let ws = null;
  let actionSent = false;
  let last = null; // the last state message (with the last RD part the server sent)
  let list = []; // the channel list: [{robot, id, name, type, size, position}]
  let listVersion = -1;
  const values = new Map(); // "robot/id" -> {seq, rate_hz, value, too_big} of watched channels
  const subscribed = new Set();
  const positions = new Map(); // "robot/id" -> {robot, x, y, owner, trail: [[x, y]...]}
  const FRAMES_MAX = 16; // up to this many position channels the map reads v2 frames
  let useFrames = true;
  const ROWS = 50; // channel rows a page of the dashboard shows
  let rowPage = 0;
  let watchSent = '';
  let series = []; // plot: [[world s, value]...]
  let seriesKey = '';
  const SERIES_MAX = 3000;
  const TRAIL_MAX = 200;

  function text(el, t) {
    t = String(t);
    if (el.textContent !== t) el.textContent = t;
  }
  function sec(us) { return (us / 1e6).toFixed(3); }
  function ms(us) { return (us / 1e3).toFixed(3); }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
  }
  function key(robot, id) { return robot + '/' + id; }

  // ---- views ----
  let view = query.get('view') || 'dashboard';
  function showView(v) {
    view = v;
    for (const s of document.querySelectorAll('.view')) s.hidden = s.id !== 'view-' + v;
    for (const b of document.querySelectorAll('nav button')) b.classList.toggle('active', b.dataset.view === v);
    sendView();
    updateWatch();
    render();
  }
  // What this page needs of the stream: the RD part on the dashboard, the positions on the map
  // (unless it reads them as v2 frames).
  function sendView() {
    if (!ws || ws.readyState !== 1) return;
    ws.send(JSON.stringify({ cmd: 'view', rd: view === 'dashboard', positions: view === 'map' && !useFrames }));
  }
  for (const b of document.querySelectorAll('nav button')) b.onclick = () => showView(b.dataset.view);

  // ---- control ----
  function send(cmd) {
    if (!ws || ws.readyState !== 1) return;
    const msg = { cmd: cmd };
    if (token) msg.token = token;
    ws.send(JSON.stringify(msg));
  }
  for (const b of document.querySelectorAll('.control button')) {
    b.disabled = !token;
    b.onclick = () => send(b.dataset.cmd);
  }
  text($('mode'), token ? 'control (token given)' : 'read-only: open the URL with ?token=');

  function onReply(r) {
    const el = $('control-reply');
    el.dataset.ok = r.ok ? 'true' : 'false';
    el.dataset.cmd = r.cmd;
    text(el, r.cmd + ': ' + (r.ok ? 'ok' : r.error || 'failed'));
  }

  // ---- v2 frames ----
  function declareRead(robot, id) {
    const name = new TextEncoder().encode(robot);
    if (name.length > 127) return;
    const buf = new ArrayBuffer(V2_HEADER);
    const u8 = new Uint8Array(buf);
    const dv = new DataView(buf);
    u8.set(name, 0);
    dv.setUint32(128, V2_MAGIC, true);
    dv.setUint16(132, 2, true);
    dv.setUint32(140, DECLARE_READ, true);
    dv.setUint32(144, 172, true);
    dv.setUint32(148, 0, true);
    dv.setInt32(176, id, true);
    ws.send(buf);
  }

  function onFrame(buf) {
    if (buf.byteLength < V2_HEADER) return;
    const dv = new DataView(buf);
    if (dv.getUint32(128, true) !== V2_MAGIC || dv.getUint16(132, true) !== 2) return;
    if (dv.getUint32(140, true) !== PDU_DATA) return;
    const u8 = new Uint8Array(buf, 0, 128);
    let n = u8.indexOf(0);
    if (n < 0) n = 128;
    const robot = new TextDecoder().decode(u8.subarray(0, n));
    const id = dv.getInt32(176, true);
    const len = dv.getUint32(148, true);
    if (V2_HEADER + len > buf.byteLength || len < 24 + 16 || !useFrames) return;
    // The PDU: [meta 24 B][base]; the base of a Twist starts with linear.x, linear.y (float64).
    const pdu = new DataView(buf, V2_HEADER, len);
    const base = pdu.getUint32(8, true);
    if (base + 16 > len) return;
    const x = pdu.getFloat64(base, true);
    const y = pdu.getFloat64(base + 8, true);
    const k = key(robot, id);
    setPosition(k, robot, x, y, ownerOf(robot));
    if (view === 'map') renderMap();
  }

  function setPosition(k, robot, x, y, owner) {
    let p = positions.get(k);
    if (!p) { p = { robot: robot, x: 0, y: 0, owner: null, trail: [] }; positions.set(k, p); }
    p.x = x; p.y = y; p.owner = owner;
    p.trail.push([x, y]);
    if (p.trail.length > TRAIL_MAX) p.trail.shift();
  }

  function onPositions(m) {
    if (useFrames) return;
    for (const [robot, id, x, y, owner] of m.positions) setPosition(key(robot, id), robot, x, y, owner);
    if (view === 'map') renderMap();
  }

  // ---- state ----
  function numericFields(v, prefix, out) {
    if (typeof v === 'number') { out.push(prefix); return out; }
    if (v && typeof v === 'object') {
      const entries = Array.isArray(v) ? v.slice(0, 16).map((x, i) => [String(i), x]) : Object.entries(v);
      for (const [k, x] of entries) {
        numericFields(x, prefix ? prefix + (Array.isArray(v) ? '[' + k + ']' : '.' + k) : k, out);
        if (out.length > 200) break;
      }
    }
    return out;
  }
  function fieldValue(v, path) {
    for (const part of path.split(/\.|\[|\]/).filter((s) => s !== '')) {
      if (v == null) return undefined;
      v = v[part];
    }
    return typeof v === 'number' ? v : undefined;
  }

  function onList(m) {
    list = m.channels;
    listVersion = m.version;
    const known = new Set(list.map((c) => key(c.robot, c.id)));
    for (const k of [...values.keys()]) if (!known.has(k)) values.delete(k);
    for (const k of [...positions.keys()]) if (!known.has(k)) positions.delete(k);
    // The server marks the map's channels: a Twist, of a robot with one named pos, position or
    // pose only that one (a drone's velocity is a Twist too).
    const pos = list.filter((c) => c.position);
    const frames = pos.length <= FRAMES_MAX;
    if (frames !== useFrames) { positions.clear(); useFrames = frames; sendView(); }
    if (useFrames) {
      for (const c of pos) {
        const k = key(c.robot, c.id);
        if (!subscribed.has(k) && ws && ws.readyState === 1) {
          subscribed.add(k);
          declareRead(c.robot, c.id);
        }
      }
    }
    updateWatch();
    render();
  }

  function onState(s) {
    if (!('eus' in s) && last) { s.eus = last.eus; s.handoffs = last.handoffs; }
    last = s;
    if (action && !actionSent && s.attached) {
      actionSent = true;
      send(action);
    }
    render();
  }

  function onValues(m) {
    for (const v of m.values) values.set(key(v.robot, v.id), v);
    recordSeries(m.world_time_usec);
    render();
  }

  // ---- the channel rows: a filter and pages of ROWS; values only for the rows shown ----
  function filtered() {
    const f = $('channel-filter').value.trim().toLowerCase();
    if (!f) return list;
    return list.filter((c) => (c.robot + '/' + c.id + ' ' + c.name + ' ' + c.type).toLowerCase().includes(f));
  }
  function visibleRows() {
    const rows = filtered();
    const pages = Math.max(1, Math.ceil(rows.length / ROWS));
    rowPage = Math.min(Math.max(0, rowPage), pages - 1);
    return { rows: rows.slice(rowPage * ROWS, rowPage * ROWS + ROWS), total: rows.length, pages: pages };
  }
  function updateWatch() {
    if (!ws || ws.readyState !== 1) return;
    const keys = [];
    if (view === 'dashboard') for (const c of visibleRows().rows) keys.push([c.robot, c.id]);
    const ck = $('plot-channel').value || query.get('channel') || '';
    const c = list.find((x) => key(x.robot, x.id) === ck);
    if (c && !keys.some(([r, i]) => r === c.robot && i === c.id)) keys.push([c.robot, c.id]);
    const sig = JSON.stringify(keys);
    if (sig === watchSent) return;
    watchSent = sig;
    ws.send(JSON.stringify({ cmd: 'watch', channels: keys }));
  }
  $('channel-filter').oninput = () => { rowPage = 0; updateWatch(); render(); };
  $('page-prev').onclick = () => { rowPage--; updateWatch(); render(); };
  $('page-next').onclick = () => { rowPage++; updateWatch(); render(); };

  function recordSeries(t_usec) {
    const ck = $('plot-channel').value, field = $('plot-field').value;
    const k = ck + ':' + field;
    if (k !== seriesKey) { series = []; seriesKey = k; }
    const e = values.get(ck);
    if (!e || !field || t_usec === undefined) return;
    const v = fieldValue(e.value, field);
    if (v === undefined) return;
    const t = t_usec / 1e6;
    if (series.length && t < series[series.length - 1][0]) series = []; // a reset
    if (series.length && t === series[series.length - 1][0]) series[series.length - 1][1] = v;
    else series.push([t, v]);
    if (series.length > SERIES_MAX) series.shift();
  }

  function render() {
    const s = last;
    if (!s) return;
    text($('domain'), "'" + s.domain + "'");
    const st = $('state');
    const state = s.attached ? s.state : 'no domain';
    st.dataset.state = state;
    text(st, state);
    $('error').hidden = !(s.attached && s.error);
    if (s.attached && s.error) text($('error'), 'error: ' + s.error);
    if (s.attached) {
      $('world-time').dataset.usec = s.world_time_usec;
      text($('world-time'), sec(s.world_time_usec));
      text($('world-steps'), s.world_steps);
      text($('rtf'), s.rtf === null ? '-' : s.rtf.toFixed(2) + 'x');
      text($('delta'), ms(s.delta_usec));
      text($('dmax'), ms(s.dmax_usec));
    }
    const v = s.viewer || {};
    text($('viewer-stats'), 'viewer: ' + v.sessions + ' session(s), ' + v.frames_sent + ' frames sent, ' +
      v.frames_dropped + ' dropped for slow clients, ' + v.frames_throttled + ' skipped over a session\'s byte budget; refused: ' +
      v.refused_path + ' path(s), ' + v.refused_message + ' message(s), ' + v.refused_token + ' token(s)');
    const smp = s.sampling || {};
    const hz = $('sample-hz');
    hz.dataset.lowered = smp.hz < smp.max_hz - 0.05 ? 'true' : 'false';
    text(hz, smp.hz === undefined ? '-' : smp.hz.toFixed(1));
    hz.title = 'the viewer samples the domain ' + (smp.hz || 0).toFixed(1) + ' times a second (at most ' + smp.max_hz +
      '); it uses ' + ((smp.cpu || 0) * 100).toFixed(0) + ' % of a core';
    $('sampling-note').hidden = hz.dataset.lowered !== 'true';
    text($('sampling-note'), 'sampling lowered to ' + (smp.hz || 0).toFixed(1) + ' Hz (of ' + smp.max_hz +
      '): the viewer used ' + ((smp.cpu || 0) * 100).toFixed(0) + ' % of a core, more than it may take from the simulation');
    if (view === 'dashboard') renderDashboard(s);
    else if (view === 'map') renderMap();
    else renderPlot();
  }

  function renderDashboard(s) {
    const assets = s.assets || [];
    text($('asset-count'), assets.length + ' registered');
    const dmax = s.dmax_usec || 1;
    let h = '';
    for (const a of assets) {
      const frac = Math.max(0, a.lag_usec) / dmax;
      // Lock-step keeps an asset one step behind the world: only past Dmax is wrong.
      const level = frac > 1 ? 'high' : 'ok';
      h += '<tr data-asset="' + esc(a.name) + '"><td>' + esc(a.name) + (a.proxy ? ' <small>(proxy)</small>' : '') +
        (a.note ? '<br><small>' + esc(a.note) + '</small>' : '') + '</td><td class="num">' + a.pid +
        '</td><td class="' + (a.alive ? '' : 'dead') + '">' + (a.alive ? 'yes' : 'NO') +
        '</td><td class="num asset-time">' + sec(a.time_usec) + '</td><td class="num">' + ms(a.delta_usec) +
        '</td><td class="num">' + a.steps + '</td><td><div class="bar" data-level="' + level +
        '"><span style="width:' + Math.min(100, frac * 100).toFixed(1) + '%"></span><em>' + ms(a.lag_usec) +
        ' / ' + ms(dmax) + ' ms</em></div></td></tr>';
    }
    $('assets').tBodies[0].innerHTML = h;
    // A federation node: its drift against each peer, as its conductor measures it.
    const fed = s.federation;
    $('fed-section').hidden = !fed;
    if (fed) {
      const fdmax = fed.dmax_usec || 1;
      text($('fed-node'), 'node ' + fed.node + ' (' + fed.role + (fed.role === 'client' ? ' of ' + fed.server : '') +
        '), Dmax ' + ms(fdmax) + ' ms');
      h = '';
      for (const p of fed.peers || []) {
        const frac = Math.max(0, p.drift_max_usec) / fdmax;
        h += '<tr data-peer="' + esc(p.id) + '" data-samples="' + p.samples + '" data-drift-max="' +
          p.drift_max_usec + '"><td>' + esc(p.id) + '</td><td>' + (p.joined ? 'yes' : 'no') +
          '</td><td class="num">' + (p.known_time_usec >= 0 ? sec(p.known_time_usec) : '-') + '</td><td class="num">' +
          p.samples + '</td><td class="num">' + ms(p.drift_p50_usec) + ' / ' + ms(p.drift_p95_usec) +
          '</td><td><div class="bar" data-level="' + (frac > 1 ? 'high' : 'ok') + '"><span style="width:' +
          Math.min(100, frac * 100).toFixed(1) + '%"></span><em>' + ms(p.drift_max_usec) + ' / ' + ms(fdmax) +
          ' ms</em></div></td></tr>';
      }
      $('fed').tBodies[0].innerHTML = h;
    }
    const vis = visibleRows();
    text($('channel-count'), list.length + ' channel(s)' + (vis.total !== list.length ? ', ' + vis.total + ' match' : ''));
    text($('page-info'), vis.total === 0 ? 'none' : (rowPage * ROWS + 1) + '-' + (rowPage * ROWS + vis.rows.length) +
      ' of ' + vis.total);
    $('page-prev').disabled = rowPage === 0;
    $('page-next').disabled = rowPage >= vis.pages - 1;
    h = '';
    for (const c of vis.rows) {
      const k = key(c.robot, c.id);
      const e = values.get(k);
      const value = e ? e.value : null;
      let val = value === null || value === undefined ? (e && e.too_big ? '(too large to show)' :
        c.robot === '_hako_conductor' ? "(the conductor's status: see Federation)" :
        !c.type ? '(type unknown: give --pdudef)' : '-') : JSON.stringify(value);
      if (val.length > 400) val = val.slice(0, 400) + '...';
      h += '<tr data-channel="' + esc(k) + '"><td>' + esc(c.robot) + '</td><td class="num">' + c.id +
        '</td><td>' + esc(c.name) + '</td><td>' + esc(c.type) + '</td><td class="num">' + (e ? e.seq : '-') +
        '</td><td class="num">' + (e ? e.rate_hz.toFixed(1) : '-') + '</td><td class="value" data-key="' +
        esc(k) + '">' + esc(val) + '</td></tr>';
    }
    $('channels').tBodies[0].innerHTML = h;
    const eus = s.eus || [];
    $('rd-section').hidden = eus.length === 0;
    h = '';
    for (const e of eus) {
      h += '<tr data-eu="' + esc(e.name) + '"><td>' + esc(e.name) + '</td><td>' + esc(e.robot) + '</td><td>' +
        e.status + '</td><td>node ' + e.owner + '</td><td>' + (e.status === 'stable' ? '-' : 'node ' + e.next_owner) +
        '</td><td class="num">' + e.epoch + '</td></tr>';
    }
    $('eus').tBodies[0].innerHTML = h;
    h = '';
    const euName = new Map(eus.map((e) => [e.id, e.name]));
    for (const o of (s.handoffs || []).slice().reverse()) {
      h += '<li data-from="' + o.from + '" data-to="' + o.to + '">' + sec(o.world_time_usec) + ' s: ' +
        esc(euName.has(o.eu) ? euName.get(o.eu) : 'EU ' + o.eu) + ' node ' + o.from + ' &rarr; node ' + o.to +
        ' (epoch ' + o.epoch + ')</li>';
    }
    $('handoffs').innerHTML = h;
    fillPlotChoices();
  }

  // ---- plot ----
  function fillPlotChoices() {
    const sel = $('plot-channel');
    const keys = list.filter((c) => c.type).map((c) => key(c.robot, c.id));
    const want = sel.value || query.get('channel') || keys[0] || '';
    if (sel.options.length !== keys.length || [...sel.options].some((o, i) => o.value !== keys[i])) {
      sel.innerHTML = keys.map((k) => '<option>' + esc(k) + '</option>').join('');
    }
    if (keys.includes(want)) sel.value = want;
    const fsel = $('plot-field');
    const e = values.get(sel.value);
    const fields = e ? numericFields(e.value, '', []) : [];
    const fwant = fsel.value || query.get('field') || fields[0] || '';
    if (fsel.options.length !== fields.length || [...fsel.options].some((o, i) => o.value !== fields[i])) {
      fsel.innerHTML = fields.map((f) => '<option>' + esc(f) + '</option>').join('');
    }
    if (fields.includes(fwant)) fsel.value = fwant;
    updateWatch(); // the plotted channel is watched too
  }
  $('plot-channel').onchange = () => { $('plot-field').value = ''; fillPlotChoices(); updateWatch(); render(); };
  $('plot-field').onchange = () => render();

  function el(tag, attrs, parent) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function label(parent, x, y, t, anchor) {
    const e = el('text', { x: x, y: y, 'text-anchor': anchor || 'start' }, parent);
    e.textContent = t;
    return e;
  }
  function niceStep(span, n) {
    const raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }
  function fmt(v, step) {
    if (Math.abs(v) < step * 1e-6) v = 0; // no "-0.0" from rounding
    const d = Math.max(0, -Math.floor(Math.log10(step)));
    return v.toFixed(Math.min(d, 6));
  }

  function renderPlot() {
    fillPlotChoices();
    const svg = $('plot');
    svg.innerHTML = '';
    const W = 900, H = 420, L = 70, R = 20, T = 20, B = 40;
    const pts = series;
    const k = $('plot-channel').value, f = $('plot-field').value;
    text($('plot-last'), pts.length ? 'latest ' + pts[pts.length - 1][1] + ' at ' + pts[pts.length - 1][0].toFixed(3) + ' s' : 'no data yet');
    if (pts.length === 0) { label(svg, W / 2, H / 2, 'no numeric value yet', 'middle'); return; }
    let t0 = pts[0][0], t1 = pts[pts.length - 1][0], v0 = Infinity, v1 = -Infinity;
    for (const p of pts) { v0 = Math.min(v0, p[1]); v1 = Math.max(v1, p[1]); }
    if (t1 <= t0) t1 = t0 + 1;
    if (v1 - v0 < 1e-9) { v0 -= 1; v1 += 1; }
    const sx = (t) => L + (t - t0) / (t1 - t0) * (W - L - R);
    const sy = (v) => H - B - (v - v0) / (v1 - v0) * (H - T - B);
    const ys = niceStep(v1 - v0, 6), xs = niceStep(t1 - t0, 8);
    for (let v = Math.ceil(v0 / ys) * ys; v <= v1 + 1e-12; v += ys) {
      el('line', { x1: L, x2: W - R, y1: sy(v), y2: sy(v), class: 'grid' }, svg);
      label(svg, L - 6, sy(v) + 4, fmt(v, ys), 'end');
    }
    for (let t = Math.ceil(t0 / xs) * xs; t <= t1 + 1e-12; t += xs) {
      el('line', { x1: sx(t), x2: sx(t), y1: T, y2: H - B, class: 'grid' }, svg);
      label(svg, sx(t), H - B + 16, fmt(t, xs), 'middle');
    }
    el('line', { x1: L, x2: L, y1: T, y2: H - B, class: 'axis' }, svg);
    el('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, class: 'axis' }, svg);
    label(svg, (L + W - R) / 2, H - 6, 'world time [s]', 'middle');
    label(svg, L + 6, T + 12, k + ' ' + f);
    el('polyline', { points: pts.map((p) => sx(p[0]).toFixed(1) + ',' + sy(p[1]).toFixed(1)).join(' '), class: 'series' }, svg);
  }

  // ---- map ----
  function ownerOf(robot) {
    for (const e of (last && last.eus) || []) if (e.robot === robot) return e.owner;
    return null;
  }

  function renderMap() {
    const svg = $('map');
    svg.innerHTML = '';
    const W = 900, H = 600, M = 40;
    const list = [...positions.entries()];
    if (list.length === 0) {
      label(svg, W / 2, H / 2, 'no geometry_msgs/Twist PDU in this domain (or its type is unknown: give --pdudef)', 'middle');
      $('map-legend').innerHTML = '';
      return;
    }
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const [, p] of list) for (const [x, y] of p.trail.concat([[p.x, p.y]])) {
      x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
    }
    const span = Math.max(x1 - x0, y1 - y0, 2) * 1.15;
    const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
    const scale = Math.min(W - 2 * M, H - 2 * M) / span;
    const sx = (x) => W / 2 + (x - cx) * scale;
    const sy = (y) => H / 2 - (y - cy) * scale; // y up
    const step = niceStep(span, 8);
    for (let x = Math.ceil((cx - W / 2 / scale) / step) * step; x <= cx + W / 2 / scale; x += step) {
      el('line', { x1: sx(x), x2: sx(x), y1: 0, y2: H, class: x === 0 ? 'axis' : 'grid' }, svg);
      label(svg, sx(x) + 3, H - 6, fmt(x, step));
    }
    for (let y = Math.ceil((cy - H / 2 / scale) / step) * step; y <= cy + H / 2 / scale; y += step) {
      el('line', { x1: 0, x2: W, y1: sy(y), y2: sy(y), class: y === 0 ? 'axis' : 'grid' }, svg);
      label(svg, 4, sy(y) - 3, fmt(y, step));
    }
    label(svg, W - 6, 16, 'x [m] \u2192, y [m] \u2191, grid ' + fmt(step, step) + ' m', 'end');
    const legend = [];
    list.sort((a, b) => a[0].localeCompare(b[0]));
    list.forEach(([k, p], i) => {
      const owner = p.owner !== null && p.owner !== undefined ? p.owner : ownerOf(p.robot);
      const color = PALETTE[(owner !== null ? owner : i) % PALETTE.length];
      if (p.trail.length > 1) {
        el('polyline', { points: p.trail.map(([x, y]) => sx(x).toFixed(1) + ',' + sy(y).toFixed(1)).join(' '),
          fill: 'none', stroke: color, 'stroke-opacity': 0.35, 'stroke-width': 2 }, svg);
      }
      el('circle', { cx: sx(p.x), cy: sy(p.y), r: list.length > 64 ? 3 : 7, fill: color, 'data-key': k,
        'data-owner': owner !== null ? owner : '' }, svg);
      if (list.length <= 64) label(svg, sx(p.x) + 9, sy(p.y) - 6, p.robot);
      if (i < 32) legend.push('<span><i style="background:' + color + '"></i>' + esc(k) + (owner !== null ? ' (node ' + owner + ')' : '') +
        ' x ' + p.x.toFixed(2) + ' y ' + p.y.toFixed(2) + '</span>');
    });
    $('map-legend').innerHTML = legend.join('');
  }

  // ---- connection ----
  function connect() {
    const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws' +
      (token ? '?token=' + encodeURIComponent(token) : '');
    ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') { onFrame(ev.data); return; }
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      if (m.type === 'state') onState(m);
      else if (m.type === 'values') onValues(m);
      else if (m.type === 'positions') onPositions(m);
      else if (m.type === 'channels') onList(m);
      else if (m.type === 'reply') onReply(m);
    };
    ws.onopen = () => { sendView(); updateWatch(); };
    ws.onclose = () => {
      subscribed.clear();
      watchSent = '';
      const st = $('state');
      st.dataset.state = 'disconnected';
      text(st, 'disconnected');
      setTimeout(connect, 1000);
    };
  }
  showView(view);
  connect();
})();
