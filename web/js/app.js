// hearth's page: keeps the selection in the URL, fetches the tree and the timeline
// for it, and links the views (timeline brush -> every view; table row <-> flame
// frame; search -> frames, rows and the matched share; a function -> its line over
// time). Heavy lifting lives in the other modules: tree.js (typed arrays), flame.js
// (canvas), table.js, timeline.js, series.js; signif.js reads the server's noise
// verdicts (the diff, "What changed").
// The top table is the server's (profile/top.c's rows over the whole merge, as
// format=topjson), sent with the tree (topRows), not summed here from the tree the
// server pruned.

import { ApiError, apiUrl, downloadWithToken, getJSON } from './api.js';
import { bareName, colorIndex, diffIndex, diffPalette, isInlined, isKernel, packageOf, palette,
  PAL_DIM } from './colors.js';
import { changeOf, compileSearch, diffRows, diffSide, fnId, fnOf, groupParts, halves, linkFunctions, markGroups,
  nameOf, sandwich, searchTree, topRows, treeArrays } from './tree.js';
import { FlameGraph } from './flame.js';
import { esc, fmtAmount, fmtInt, fmtPct, fmtPP, fmtTime, hasReasons, REASON_LABEL, setUnit, TIME_TYPES,
  typeLabel } from './format.js';
import { QueryBar, withType, without } from './querybar.js';
import { renderChangesTable, renderDiffTable, TopTable } from './table.js';
import { SeriesChart } from './series.js';
import { fmtChange, fmtConfidence, fmtInterval, normUnit, significant, sortBySignificance, unitLabel,
  verdictMap, verdictOf, verdictText } from './signif.js';
import { Timeline } from './timeline.js';
import { initTheme } from './theme.js';
import { apiTime, durationSec, fmtDuration, keepTime, showTime, stepFor, toSec } from './timeparse.js';
import { RangeBar } from './rangebar.js';

const $ = (sel) => document.querySelector(sel);
const DEFAULTS = {
  query: '', type: '', from: 'now-1h', until: 'now', view: 'flame', search: '', focus: '', groupBy: '',
  orient: 'icicle', maxNodes: '20000', lquery: '', lfrom: '', luntil: '', rquery: '', rfrom: '',
  runtil: '', normalize: 'share', baseline: 'previous', series: '', seriesKind: 'total', seriesNorm: 'value',
  sort: '-self', zoom: '', refresh: '', diffMode: 'combined', group: '', unnamed: '', hide: '',
};
const VIEWS = ['flame', 'sandwich', 'diff', 'changes'];
const CHOICES = {
  normalize: ['share', 'rate'], baseline: ['previous', '1d', '7d'], seriesKind: ['total', 'self'],
  seriesNorm: ['value', 'share', 'rate'], sort: ['-self', 'self', '-total', 'total', 'name', '-name'],
  refresh: ['', '10s', '30s', '1m', '5m'], diffMode: ['combined', 'split'], unnamed: ['', 'addresses'],
};
const REFRESH_SEC = { '10s': 10, '30s': 30, '1m': 60, '5m': 300 };
/* The top table's order in the URL: a key, "-" first when descending. */
const sortOf = (s) => [s.replace(/^-/, ''), s.startsWith('-') ? 'descending' : 'ascending'];
/* The flame graph's zoom in the URL: the zoomed frame's path of names from the root,
 * ";"-separated as in folded stacks (node numbers change with every load). */
const ZOOM_SEP = ';';
/* The tree's group-by (URL "group", API groupBy=): a label name, "none" (grouping
 * turned off), or "" (the default: "process" for the whole machine, an empty
 * selector, when the store has that label; none for a selector, which already
 * picks what to look at). Apart from the timeline's "stack by" (URL "groupBy"),
 * which keeps its own key so older links keep their meaning. */
const LABEL_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const GROUP_DEFAULT = 'process';
/* The label names /api/labels gave (null until it answered), and that answer. */
let labelNames = null;
let labelsReady = null;

/** The label the tree, the top table and the diff are grouped by now ('' = none). */
function treeGroup() {
  if (state.group === 'none') return '';
  if (state.group) return state.group;
  const whole = !state.query.trim() || state.query.trim() === '{}';
  return whole && labelNames && labelNames.includes(GROUP_DEFAULT) ? GROUP_DEFAULT : '';
}

const state = readURL();
let tree = null; // typed arrays (tree.js) of the /api/profile answer for the current selection
let diffTree = null;
let diffKey = ''; // the diff selection diffTree was fetched for
/* The diff answer's noise judgement: {unit (normUnit), confidence, note, verdicts
 * (signif.js verdictMap)}, or null from a server that sends none. */
let diffSig = null;
let changesKey = ''; // the /api/regressions request the "What changed" table shows
let seriesSeq = 0;
let matcher = null;
let loadSeq = 0;
/* Bumped by every diff request: an older diff's answer (the default ranges the view
 * opened with, say) that arrives after a newer one's is dropped, never shown. */
let diffSeq = 0;
let inflight = null;

// ---- URL state ----

function readURL() {
  const p = new URLSearchParams(location.search);
  const s = {};
  for (const k of Object.keys(DEFAULTS)) s[k] = p.get(k) ?? DEFAULTS[k];
  if (!VIEWS.includes(s.view)) s.view = 'flame';
  if (s.orient !== 'flame') s.orient = 'icicle';
  if (!/^\d+$/.test(s.maxNodes) || Number(s.maxNodes) < 1) s.maxNodes = DEFAULTS.maxNodes;
  for (const [k, ok] of Object.entries(CHOICES)) if (!ok.includes(s[k])) s[k] = DEFAULTS[k];
  if (s.group !== 'none' && !LABEL_RE.test(s.group)) s.group = DEFAULTS.group;
  return s;
}

function writeURL(push) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) {
    if (v !== DEFAULTS[k] && v !== '') p.set(k, v);
  }
  const url = location.pathname + (p.toString() ? `?${p}` : '');
  if (url === location.pathname + location.search) return;
  if (push) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
}

// ---- status and errors ----

function setReady(on) {
  document.body.dataset.ready = on ? '1' : '0';
}

function showError(msg) {
  const el = $('#error');
  el.textContent = msg || '';
  el.hidden = !msg;
}

function errorText(e, what) {
  if (e instanceof ApiError) {
    if (e.status === 0) return 'Server unreachable: hearth did not answer (is `hearth server` or `hearth run` still running?)';
    if (e.status === 400) return `Invalid query: ${e.message}`;
    if (e.status === 401) return 'This server wants a token: opening the login page…';
    return `${what} failed (${e.status}): ${e.message}`;
  }
  return `${what} failed: ${e.message || e}`;
}

function rangeText() {
  const now = Date.now() / 1000;
  const f = toSec(state.from, now);
  const u = toSec(state.until, now);
  if (state.until === 'now' && /^now-/.test(state.from)) return `last ${state.from.slice(4)}`;
  if (Number.isFinite(f) && Number.isFinite(u)) return `${fmtTime(f)} – ${fmtTime(u)}`;
  return `${state.from} – ${state.until}`;
}

// ---- the graphs ----

const tooltipEl = $('#tooltip');

/** A group node's title and the line saying what it holds ("process=xz": the stacks of process xz). */
function groupHead(t, i) {
  const [label, value] = groupParts(nameOf(t, i));
  return `<div class="tname"><span class="tag group">${esc(label)}</span>${value ? esc(value) : '<i>(no value)</i>'}</div>`;
}
const groupLine = (t, i) => {
  const [label, value] = groupParts(nameOf(t, i));
  return `<tr><td>Group</td><td>the stacks with ${esc(label)}${value ? `="${esc(value)}"` : ' unset'}` +
    ' (<i>group by</i> above the graph)</td></tr>';
};
/** The tooltip line of unnamed code grouped per object ("liblzma.so.5 [no symbols]"). */
const unnamedLine = (name) => (name.endsWith(' [no symbols]')
  ? '<tr><td>Unnamed</td><td>code of this object without symbols, all its addresses in one frame ' +
    '(<i>unnamed: per address</i> splits it)</td></tr>' : '');

/** Tooltip for a profile frame; whole = what "% of ..." refers to (the root's samples). */
const profileTip = (whole) => (t, i) => {
  const name = nameOf(t, i);
  const root = t.total[0];
  if (t.group && t.group[i]) {
    return `${groupHead(t, i)}<table>${groupLine(t, i)}` +
      `<tr><td>Total</td><td>${fmtAmount(t.total[i])} · ${fmtPct(t.total[i], root)} of ${esc(whole(t))}</td></tr></table>`;
  }
  const p = t.parent[i];
  const parent = p >= 0 ? t.total[p] : root;
  const tags = (isInlined(name) ? '<span class="tag">inlined</span>' : '') +
    (isKernel(name) ? '<span class="tag">kernel</span>' : '');
  const mod = t.modIdx[i] >= 0 ? t.names[t.modIdx[i]] : '';
  const pkg = mod || packageOf(name);
  const of = esc(whole(t));
  return `<div class="tname">${esc(bareName(name))}${tags}</div><table>` +
    `<tr><td>Self</td><td>${fmtAmount(t.self[i])} · ${fmtPct(t.self[i], root)} of ${of}</td></tr>` +
    `<tr><td>Total</td><td>${fmtAmount(t.total[i])} · ${fmtPct(t.total[i], root)} of ${of} · ` +
    `${fmtPct(t.total[i], parent)} of parent</td></tr>` +
    (pkg !== bareName(name) ? `<tr><td>${mod ? 'Module' : 'Package'}</td><td>${esc(pkg)}</td></tr>` : '') +
    unnamedLine(name) + '</table>';
};
const wholeProfile = () => 'total';
const wholeFn = (t) => `${bareName(t.names[t.nameIdx[0]])}'s samples`;

function diffTip(t, i) {
  const name = nameOf(t, i);
  const L = t.ltotal[0];
  const R = t.rtotal[0];
  const ch = changeOf(t, i);
  const cls = ch > 0 ? 'pos' : ch < 0 ? 'neg' : '';
  const v = diffSig && i > 0 ? verdictOf(diffSig.verdicts, name) : null;
  // The function's own verdicts (over all its frames), in the diff's normalisation.
  const head = t.group && t.group[i] ? groupHead(t, i)
    : `<div class="tname">${esc(bareName(name))}${isInlined(name) ? '<span class="tag">inlined</span>' : ''}</div>`;
  const judged = (what, d) => (d ? `<tr><td>${what}</td><td class="${significant(d) ? (d.verdict === 'up' ? 'pos' : 'neg') : ''}">` +
    `${fmtChange(d.change, diffSig.unit)} (${fmtInterval(d.low, d.high, diffSig.unit)}): ` +
    `${verdictText(d, diffSig.confidence)}</td></tr>` : '');
  return `${head}<table>${t.group && t.group[i] ? groupLine(t, i) : ''}` +
    `<tr><td>Before</td><td>${fmtAmount(t.ltotal[i])} · ${fmtPct(t.ltotal[i], L)} of total` +
    ` (self ${fmtInt(t.lself[i])})</td></tr>` +
    `<tr><td>After</td><td>${fmtAmount(t.rtotal[i])} · ${fmtPct(t.rtotal[i], R)} of total` +
    ` (self ${fmtInt(t.rself[i])})</td></tr>` +
    `<tr><td>Change</td><td class="${cls}">${fmtPP(ch)} of total (this frame)</td></tr>` +
    (v ? judged('Self', v.self) + judged('Total', v.total) : '') + unnamedLine(name) + '</table>';
}

const DIFF_PAL = diffPalette.concat(['hsl(220, 12%, 93%)']);
const NEUTRAL = diffIndex(0, 1); // grey: the same, or within noise
/* The verdict a diff frame is coloured by: its function's self change (what the
 * function itself costs; a caller whose callees changed keeps its colour grey). */
const frameVerdict = (t, i) => (diffSig && i > 0 ? verdictOf(diffSig.verdicts, nameOf(t, i))?.self : null);
const diffColors = (t) => {
  const c = new Uint8Array(t.n);
  if (diffSig) {
    // Only a change beyond noise is coloured, its shade by its size among those.
    let max = 0;
    for (const v of diffSig.verdicts.values()) if (significant(v.self)) max = Math.max(max, Math.abs(v.self.change));
    for (let i = 0; i < t.n; i++) {
      const d = frameVerdict(t, i);
      c[i] = significant(d) && max > 0
        ? diffIndex(Math.sign(d.change) * Math.max(0.35 * max, Math.abs(d.change)), max) : NEUTRAL;
    }
    return c;
  }
  let max = 0.1;
  for (let i = 1; i < t.n; i++) max = Math.max(max, Math.abs(changeOf(t, i)));
  for (let i = 0; i < t.n; i++) c[i] = diffIndex(changeOf(t, i), max);
  return c;
};

const flame = new FlameGraph($('#flame'), $('#flame-frames'), {
  palette, dimIndex: PAL_DIM, colors: (t) => t.color, tooltip: profileTip(wholeProfile), tooltipEl,
  orient: state.orient, focusOnClick: true,
  onSelect: (i) => {
    renderBreadcrumbs();
    keepZoom();
    if (i > 0) selectFunction(fnOf(flame.t, i), { fromFlame: true });
  },
  onContext: (i) => showSeries(fnOf(flame.t, i)),
});
const callersGraph = new FlameGraph($('#sandwich-callers'), $('#sandwich-callers ul'), {
  palette, dimIndex: PAL_DIM, colors: (t) => t.color, tooltip: profileTip(wholeFn), tooltipEl,
  orient: 'flame',
});
const calleesGraph = new FlameGraph($('#sandwich-callees'), $('#sandwich-callees ul'), {
  palette, dimIndex: PAL_DIM, colors: (t) => t.color, tooltip: profileTip(wholeFn), tooltipEl,
  orient: 'icicle',
});
const diffGraph = new FlameGraph($('#diff-flame'), $('#diff-flame ul'), {
  palette: DIFF_PAL, dimIndex: DIFF_PAL.length - 1, colors: diffColors, tooltip: diffTip,
  tooltipEl, orient: state.orient, change: (i) => changeOf(diffTree, i), focusOnClick: true,
  verdict: (i) => (diffSig && i > 0 ? (frameVerdict(diffTree, i) || { verdict: 'noise' }).verdict : ''),
  onSelect: (i) => {
    if (i > 0) selectFunction(fnOf(diffTree, i), { fromDiff: true });
  },
  onContext: (i) => showSeries(fnOf(diffTree, i)),
});
/* The side-by-side diff: each side's frames as a plain flame graph, coloured by
 * module/package as the flame graph is, so a function has one colour on both. */
const sideGraph = (el, list) => {
  const g = new FlameGraph(el, list, {
    palette, dimIndex: PAL_DIM, colors: (t) => t.color, tooltip: profileTip(wholeProfile), tooltipEl,
    orient: state.orient, focusOnClick: true,
    onSelect: (i) => {
      if (i > 0) selectFunction(fnOf(g.t, i), { fromSide: g });
    },
    onContext: (i) => showSeries(fnOf(g.t, i)),
  });
  return g;
};
const leftGraph = sideGraph($('#diff-left'), $('#diff-left ul'));
const rightGraph = sideGraph($('#diff-right'), $('#diff-right ul'));
const splitGraphs = [leftGraph, rightGraph];

const table = new TopTable($('#top-table'), $('#top-filter'), $('#top-note'), (name) =>
  selectFunction(name, { fromTable: true }), (name) => showSeries(name), (key, dir) => {
  state.sort = (dir === 'descending' ? '-' : '') + key;
  writeURL(false);
});
table.setSort(...sortOf(state.sort));

function renderBreadcrumbs() {
  const nav = $('#breadcrumbs');
  nav.innerHTML = '';
  const t = flame.t;
  if (!t) return;
  const path = flame.path(flame.zoom);
  path.forEach((i, k) => {
    if (k) nav.insertAdjacentHTML('beforeend', '<span class="sep" aria-hidden="true">›</span>');
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = bareName(nameOf(t, i)); // the frame's function, as the tables name it
    b.title = nameOf(t, i);
    if (t.inlined[i]) b.classList.add('inlined');
    if (t.group && t.group[i]) {
      const [label, value] = groupParts(nameOf(t, i));
      b.classList.add('group');
      b.title = `the stacks of ${label} ${value || '(no value)'}`;
    }
    if (k === path.length - 1) b.setAttribute('aria-current', 'true');
    b.addEventListener('click', () => zoomFlame(i));
    nav.appendChild(b);
  });
  $('#reset-zoom').disabled = flame.zoom === 0;
}

function zoomFlame(i) {
  performance.mark('hearth:zoom-start');
  flame.zoom = i;
  flame.drawCanvas();
  performance.measure('hearth:flame-zoom', 'hearth:zoom-start');
  flame.renderList();
  renderBreadcrumbs();
  keepZoom();
}

/** Puts the flame graph's zoom in the URL (state.zoom), as its path of names. */
function keepZoom() {
  state.zoom = flame.path(flame.zoom).slice(1).map((i) => nameOf(flame.t, i)).join(ZOOM_SEP);
  writeURL(false);
}

/** The node of t at state.zoom's path, or its deepest ancestor there (0: the root). */
function zoomNode(t) {
  let node = 0;
  for (const name of state.zoom ? state.zoom.split(ZOOM_SEP) : []) {
    let c = node + 1;
    while (c < t.end[node] && nameOf(t, c) !== name) c = t.end[c];
    if (c >= t.end[node]) break;
    node = c;
  }
  return node;
}

/** Makes name the focused function everywhere (frames, rows, URL, sandwich). */
function selectFunction(name, how = {}) {
  state.focus = name;
  writeURL(false);
  $('#series-focus').disabled = !name;
  // name is the function as the tables name it; its frames, inlined ones too, light up.
  const id = fnId(tree, name);
  if (!how.fromFlame) {
    flame.setFocus(id);
    if (tree && state.view === 'flame') flame.render(); // a hidden graph redraws when shown
  }
  table.setSelected(name);
  if (diffTree) {
    diffGraph.setFocus(fnId(diffTree, name));
    if (!how.fromDiff && state.view === 'diff' && state.diffMode === 'combined') diffGraph.render();
    markDiffRow();
  }
  for (const g of splitGraphs) {
    g.setFocus(fnId(g.t, name));
    if (g.t && g !== how.fromSide && state.view === 'diff' && state.diffMode === 'split') g.render();
  }
  if (state.view === 'sandwich') renderSandwich();
}

/** Marks the diff table's row of the focused function. */
function markDiffRow() {
  for (const tr of $('#diff-table').tBodies[0].rows) {
    if (tr.dataset.name === state.focus) tr.setAttribute('aria-selected', 'true');
    else tr.removeAttribute('aria-selected');
  }
}

// ---- search ----

/** Applies the search box to every view; redraw=false when the caller draws next. */
function applySearch(redraw = true) {
  const share = $('#search-share');
  share.classList.remove('bad');
  $('#search').removeAttribute('aria-invalid');
  matcher = compileSearch(state.search);
  if (matcher && matcher.error) {
    share.textContent = matcher.error;
    share.classList.add('bad');
    $('#search').setAttribute('aria-invalid', 'true'); // outlined; the message is cut to one line
    matcher = null;
  }
  share.title = share.textContent;
  const r = tree && matcher ? searchTree(tree, matcher) : null;
  flame.setMatch(r ? r.byName : null);
  for (const g of [callersGraph, calleesGraph, diffGraph, ...splitGraphs]) {
    g.setMatch(matcher && g.t ? searchTree(g.t, matcher).byName : null);
  }
  if (r) {
    table.setMatch((name) => matcher.test(name));
    share.textContent = `Matched: ${fmtPct(r.matched, tree.total[0]).replace(/(\.\d)\d%$/, '$1%')} ` +
      `of total (${fmtAmount(r.matched)})`;
  } else {
    table.setMatch(null);
    if (!share.classList.contains('bad')) share.textContent = share.title = '';
  }
  if (redraw) redrawVisible();
}

function redrawVisible() {
  if (state.view === 'flame' && tree) flame.render();
  if (state.view === 'sandwich') {
    callersGraph.render();
    calleesGraph.render();
  }
  if (state.view === 'diff' && diffTree) renderDiffGraphs();
}

/** Draws the diff as chosen (state.diffMode): one combined graph, or both sides apart. */
function renderDiffGraphs() {
  const split = state.diffMode === 'split';
  for (const b of document.querySelectorAll('button[data-diffmode]')) {
    b.setAttribute('aria-pressed', String(b.dataset.diffmode === state.diffMode));
  }
  $('#diff-scale').hidden = split;
  $('#diff-split-key').hidden = !split;
  const shown = !!diffTree && $('#diff-empty').hidden;
  $('#diff-flame').hidden = !shown || split;
  $('#diff-split').hidden = !shown || !split;
  if (!shown) return;
  if (split) for (const g of splitGraphs) g.render();
  else diffGraph.render();
}

// ---- loading ----

function syncInputs() {
  $('#query').value = state.query;
  if ([...$('#ptype').options].some((o) => o.value === state.type)) $('#ptype').value = state.type;
  rangeBar.sync(state.from, state.until);
  $('#search').value = state.search;
  // The diff's ranges as the main range shows them: fixed instants as local dates.
  for (const k of ['lquery', 'rquery']) $(`#${k}`).value = state[k];
  for (const k of DIFF_TIMES) {
    $(`#${k}`).value = showTime(state[k]);
    $(`#${k}`).removeAttribute('aria-invalid');
  }
  syncGroupInputs();
  $('#normalize').value = state.normalize;
  $('#baseline').value = state.baseline;
  $('#series-kind').value = state.seriesKind;
  $('#series-normalize').value = state.seriesNorm;
  $('#series-focus').disabled = !state.focus;
  $('#orient').textContent = state.orient === 'flame' ? 'Flame ▲' : 'Icicle ▼';
  $('#orient').setAttribute('aria-label', `Orientation: ${state.orient} (click to switch)`);
  $('#auto-refresh').value = state.refresh;
  const mn = $('#max-nodes');
  if (![...mn.options].some((o) => o.value === state.maxNodes)) mn.add(new Option(fmtInt(+state.maxNodes), state.maxNodes));
  mn.value = state.maxNodes;
}

const DIFF_TIMES = ['lfrom', 'luntil', 'rfrom', 'runtil'];

/** The group-by and unnamed-code selects (flame panel and diff form) show the state. */
function syncGroupInputs() {
  const g = treeGroup() || 'none';
  for (const sel of document.querySelectorAll('select.group-by')) {
    if (![...sel.options].some((o) => o.value === g)) sel.add(new Option(g, g));
    sel.value = g;
    sel.title = g === 'none' ? 'Not grouped: stacks of every process merged by function name' : `A root level per ${g}`;
  }
  for (const sel of document.querySelectorAll('select.unnamed-code')) sel.value = state.unnamed;
}

/** The tree's request options: its group-by and how unnamed code is shown. */
const treeOptions = () => ({ groupBy: treeGroup(), unnamed: state.unnamed });

let refreshTimer = 0;
/** Loads the selection again: a range ending now moves to the new now. */
function refresh() {
  diffKey = '';
  changesKey = '';
  load();
}
/** Starts the auto-refresh of state.refresh; a tick is skipped while a load runs or the tab is hidden. */
function scheduleRefresh() {
  clearInterval(refreshTimer);
  const sec = REFRESH_SEC[state.refresh];
  if (!sec) return;
  refreshTimer = setInterval(() => {
    if (document.visibilityState === 'visible' && document.body.dataset.ready !== '0') refresh();
  }, sec * 1000);
}

/** The reasons the reason filter leaves out (URL "hide": comma-separated). */
const hiddenReasons = () => (hasReasons(state.type) && state.hide ? state.hide.split(',') : []);
/** The selector sent to the server: the query bar's, of the chosen profile type,
 * without the reasons the filter leaves out (off-CPU and wall-clock types). */
const typedQuery = (q) => without(withType(q, state.type), REASON_LABEL, hiddenReasons());

// Exports are plain links; with a token kept (login.html) they are fetched with it.
for (const f of ['pprof', 'folded', 'svg']) $(`#export-${f}`).addEventListener('click', downloadWithToken);

function updateExports() {
  const sel = { query: typedQuery(state.query), from: apiTime(state.from), until: apiTime(state.until) };
  for (const f of ['pprof', 'folded', 'svg']) {
    $(`#export-${f}`).href = apiUrl('/api/profile', { format: f, ...sel });
  }
}

/** Reloads everything for the current selection. */
async function load() {
  const seq = ++loadSeq;
  if (inflight) inflight.abort();
  inflight = new AbortController();
  const signal = inflight.signal;
  setReady(false);
  showError('');
  $('#query').removeAttribute('aria-invalid');
  rangeBar.clear();
  $('#status').textContent = 'Loading…';
  updateExports();
  const sel = { query: typedQuery(state.query), from: apiTime(state.from), until: apiTime(state.until) };
  const timeline = loadTimeline(signal);
  const series = state.series ? loadSeries(signal) : null;
  try {
    await labelsReady; // the default group-by needs to know whether "process" is a label
    if (seq !== loadSeq) return;
    syncGroupInputs();
    // One request, one merge on the server: the tree and the top table's rows.
    const data = await getJSON('/api/profile',
      { format: 'tree', ...sel, maxNodes: state.maxNodes, topRows: TOP_ROWS, ...treeOptions() }, signal);
    if (seq !== loadSeq) return;
    performance.mark('hearth:tree-parsed');
    await showTree(data, seq);
    if (seq !== loadSeq) return;
  } catch (e) {
    if (e.name === 'AbortError' || seq !== loadSeq) return;
    tree = null;
    // The box the server's message names (from, until), else the selector.
    if (e instanceof ApiError && e.status === 400 && !rangeBar.blameMessage(e.message)) $('#query').setAttribute('aria-invalid', 'true');
    showTreeError(errorText(e, 'Loading the profile'));
  }
  await timeline;
  await series;
  if (seq !== loadSeq) return;
  if (state.view === 'diff') await loadDiff();
  if (state.view === 'changes') await loadChanges();
  if (seq === loadSeq) setReady(true);
}

// Trees above this many frames are drawn first from a quick tree of only the frames
// wide enough to see, so the graph appears before the full tree is built.
const QUICK_FRAMES = 20000;
// Rows of the top table asked for: more functions than a profile has in practice (the
// table puts 500 of them in the page; its filter searches them all).
const TOP_ROWS = 100000;

async function showTree(data, seq) {
  const total = +data.total || 0;
  setUnit(data.unit, state.type);
  matcher = compileSearch(state.search);
  if (matcher && matcher.error) matcher = null; // applySearch() below says why
  const root = data.tree || { name: 'total', self: 0, total: 0 };
  const empty = total <= 0;
  // Frames are named as the top table names their functions (tree.js linkFunctions).
  const fns = new Set(data.top && Array.isArray(data.top.rows) ? data.top.rows.map((r) => String(r.name)) : []);
  const has = fns.size ? (n) => fns.has(n) : null;
  $('#flame').hidden = empty;
  $('#flame-empty').hidden = !empty;
  const quick = Number(state.maxNodes) > QUICK_FRAMES && !empty
    ? treeArrays(root, null, 'all', (total * 0.5) / Math.max(100, Math.floor(flame.width || $('#flame').clientWidth))) : null;
  if (quick) {
    // The quick tree holds exactly the frames the full one would draw unzoomed.
    markGroups(linkFunctions(quick, has), treeGroup());
    flame.setTree(quick);
    flame.zoom = zoomNode(quick);
    flame.setFocus(fnId(quick, state.focus));
    if (matcher) flame.setMatch(searchTree(quick, matcher).byName);
    flame.drawCanvas();
    performance.measure('hearth:flame-render', 'hearth:tree-parsed');
    await new Promise((r) => setTimeout(r, 0)); // let the browser show it
    if (seq !== loadSeq) return;
  }
  tree = markGroups(linkFunctions(treeArrays(root), has), treeGroup());
  flame.setTree(tree);
  flame.zoom = zoomNode(tree); // the zoom the URL names, kept across reloads
  flame.setFocus(fnId(tree, state.focus));
  if (matcher) flame.setMatch(searchTree(tree, matcher).byName);
  flame.drawCanvas();
  if (!quick) performance.measure('hearth:flame-render', 'hearth:tree-parsed');
  flame.renderList();
  renderBreadcrumbs();
  // The table comes after the graph: its layout must not delay the first draw.
  const t = tree;
  table.setRows(topRows(data.top, t), total,
    (r) => palette[r.first >= 0 ? t.color[r.first] : colorIndex(r.name)]);
  table.setSelected(state.focus);
  applySearch(false);
  // Parsed -> everything usable (full tree, zoom, table, search): the whole cost.
  performance.measure('hearth:flame-ready', 'hearth:tree-parsed');
  if (empty) {
    const msg = 'No data in this time range';
    showError(msg);
    $('#flame-empty').textContent = `${msg}: nothing matches ${state.query || 'any series'} ` +
      `for ${rangeText()}. Try a longer range or another selector.`;
    $('#status').textContent = fmtAmount(0);
  } else {
    $('#status').textContent = `${fmtAmount(total)} · ${fmtInt(tree.n - 1)} frames · ` +
      `${rangeText()}${tree.n >= Number(state.maxNodes) ? ` · the server kept the largest ${fmtInt(state.maxNodes)} (maxNodes)` : ''}`;
  }
  if (state.view === 'sandwich') renderSandwich();
}

function showTreeError(msg) {
  showError(msg);
  $('#status').textContent = 'Error';
  flame.setTree(null);
  flame.render();
  table.setRows([], 0);
  $('#flame').hidden = true;
  $('#flame-empty').hidden = false;
  $('#flame-empty').textContent = msg;
  renderBreadcrumbs();
  if (state.view === 'sandwich') renderSandwich();
}

const timelineView = new Timeline($('#timeline'), $('#timeline-legend'), (from, until, e) => {
  if (state.view === 'diff') {
    brushDiff(from, until, e);
    return;
  }
  state.from = String(from);
  state.until = String(until);
  writeURL(true);
  syncInputs();
  load();
}, tooltipEl);

async function loadTimeline(signal) {
  const now = Date.now() / 1000;
  const step = stepFor(toSec(state.from, now), toSec(state.until, now));
  try {
    const d = await getJSON('/api/timeline', {
      query: typedQuery(state.query), from: apiTime(state.from), until: apiTime(state.until), step, groupBy: state.groupBy,
    }, signal);
    setUnit(d.unit, state.type);
    timelineView.setData(d);
  } catch (e) {
    if (e.name === 'AbortError') return;
    // The profile's own error says what is wrong with the selection; this says the rest.
    timelineView.setData(null, e instanceof ApiError && e.status ? e.message : '');
  }
}

// The profile types with data in the range: CPU (every process_cpu:* type, the
// server's default) first, then the others, e.g. "memory: inuse_space (bytes)".
async function loadTypes() {
  const sel = $('#ptype');
  let types = [];
  try {
    types = await getJSON('/api/label/__profile_type__/values', { from: apiTime(state.from), until: apiTime(state.until) });
  } catch {
    // The profile load reports an unreachable server; the select keeps CPU.
  }
  const others = types.filter((t) => !t.startsWith('process_cpu:'));
  if (state.type && !others.includes(state.type)) others.push(state.type);
  // off-CPU and wall-clock time right after CPU, then the others as they come
  others.sort((a, b) => hasReasons(b) - hasReasons(a));
  sel.innerHTML = '<option value="">CPU</option>' +
    others.map((t) => `<option value="${esc(t)}">${esc(typeLabel(t))}</option>`).join('');
  sel.value = state.type;
}

/*
 * The reason filter of off-CPU and wall-clock types (docs/ui.md): one checkbox
 * per value of the `reason` label in the range; an unticked reason is left out
 * of every view (reason!~"..." in each selector sent), kept in the URL ("hide").
 * Hidden for other types.
 */
async function loadReasons() {
  const box = $('#reasons');
  const type = state.type;
  box.hidden = !hasReasons(type);
  $('#timeline-title').textContent = hasReasons(type) ? `${TIME_TYPES[type][0].toUpperCase()}${TIME_TYPES[type].slice(1)} over time` : 'Samples over time';
  $('#width-what').textContent = hasReasons(type) ? 'time' : 'samples';
  if (box.hidden) return;
  let values = [];
  try {
    values = await getJSON(`/api/label/${REASON_LABEL}/values`, {
      query: withType('', type), from: apiTime(state.from), until: apiTime(state.until),
    });
  } catch {
    // The profile load reports the error; the filter keeps what the URL hides.
  }
  if (type !== state.type) return; // the type changed meanwhile
  const hidden = hiddenReasons();
  for (const h of hidden) if (!values.includes(h)) values.push(h);
  const list = $('#reasons-list');
  list.innerHTML = values.map((v) => `<label class="reason" title="Show the time threads spent waiting for '${esc(v)}'">` +
    `<input type="checkbox" value="${esc(v)}"${hidden.includes(v) ? '' : ' checked'}> ${esc(v)}</label>`).join('');
  $('#reasons-none').hidden = values.length > 0;
}

/** Fills the timeline's "stack by" and the tree's "group by" with the label names. */
async function loadGroupBy() {
  const sel = $('#groupby');
  const opt = (n) => `<option value="${esc(n)}">${esc(n === '__name__' ? 'name (__name__)' : n)}</option>`;
  let names = [];
  try {
    const labels = await getJSON('/api/labels');
    names = labels.filter((n) => n !== '__profile_type__');
  } catch {
    // The profile load reports an unreachable server; the selects keep "none".
  }
  labelNames = names;
  const stack = names.slice();
  if (state.groupBy && !stack.includes(state.groupBy)) stack.push(state.groupBy);
  sel.innerHTML = '<option value="">none</option>' + stack.map(opt).join('');
  sel.value = state.groupBy;
  // The tree also groups by pid and tid, kept inside each stack (docs/storage.md).
  const tree = names.concat(['pid', 'tid'].filter((n) => !names.includes(n)));
  for (const g of document.querySelectorAll('select.group-by')) {
    g.innerHTML = '<option value="none">none</option>' + tree.map(opt).join('');
  }
  syncGroupInputs();
}

// ---- sandwich ----

function renderSandwich() {
  const fn = state.focus;
  $('#sandwich-fn').textContent = fn || '(no function selected)';
  const empty = $('#sandwich-empty');
  let msg = '';
  let s = null;
  if (!tree) msg = 'No profile loaded.';
  else if (!fn) msg = 'Pick a function: click a frame in the flame graph or a row of the top table, then open this tab.';
  else if (!(s = sandwich(tree, fn))) msg = `${fn} does not appear in this profile.`;
  empty.hidden = !msg;
  empty.textContent = msg;
  const row = s && table.rows.find((r) => r.name === fn);
  $('#sandwich-stats').textContent = row
    ? `total ${fmtAmount(row.total)} (${fmtPct(row.total, tree.total[0])}) · self ${fmtAmount(row.self)} (${fmtPct(row.self, tree.total[0])})`
    : '';
  // The callers end in the group-by's level (process=xz), wherever it lands.
  callersGraph.setTree(s ? markGroups(treeArrays(s.callers, null, fn), tree.groupBy, true) : null);
  calleesGraph.setTree(s ? treeArrays(s.callees, null, fn) : null);
  for (const g of [callersGraph, calleesGraph]) {
    g.container.hidden = !s;
    g.setMatch(matcher && g.t ? searchTree(g.t, matcher).byName : null);
    g.render();
  }
}

// ---- diff ----

/** Fills empty diff fields: both sides the main query, right = current range, left = the one before. */
function diffDefaults() {
  if (!state.lquery && !state.rquery) state.lquery = state.rquery = state.query;
  if (!state.rfrom && !state.runtil) {
    state.rfrom = state.from;
    state.runtil = state.until;
  }
  const rel = /^now-(.+)$/.exec(state.rfrom);
  if (!state.lfrom && !state.luntil && rel && state.runtil === 'now' && durationSec(rel[1]) > 0) {
    state.lfrom = `now-${fmtDuration(2 * durationSec(rel[1]))}`;
    state.luntil = state.rfrom;
  }
  if (!state.lfrom && !state.luntil) {
    const now = Math.floor(Date.now() / 1000);
    const f = toSec(state.rfrom, now);
    const u = toSec(state.runtil, now);
    if (Number.isFinite(f) && Number.isFinite(u) && u > f) {
      state.lfrom = String(Math.floor(f - (u - f)));
      state.luntil = String(Math.floor(f));
    }
  }
}

/* Set when the diff's default sides (the range before vs the current one) found
 * nothing before and it compares the two halves of the current range instead:
 * the line saying so above the diff. Cleared when the user picks the sides. */
let diffFallback = '';

/** A side's range in words: dates when both ends read, else as typed. */
function sideRange(from, until) {
  const now = Date.now() / 1000;
  const f = toSec(from, now);
  const u = toSec(until || 'now', now);
  return Number.isFinite(f) && Number.isFinite(u) ? `${fmtTime(f)} – ${fmtTime(u)}` : `${from} – ${until}`;
}

async function loadDiff() {
  // Sides nobody picked: the defaults, and the halves fallback when "before" is empty.
  const auto = !state.lfrom && !state.luntil && !state.rfrom && !state.runtil;
  if (auto) diffFallback = '';
  diffDefaults();
  syncInputs();
  writeURL(false);
  /* what the six boxes show now: the halves fallback below only replaces sides
   * the user has not typed into while the first answer was on its way */
  const boxes = () => ['lquery', 'lfrom', 'luntil', 'rquery', 'rfrom', 'runtil'].map((id) => $(`#${id}`).value).join('\n');
  const shown = boxes();
  const params = {
    left: typedQuery(state.lquery), right: typedQuery(state.rquery), leftfrom: apiTime(state.lfrom), leftuntil: apiTime(state.luntil),
    rightfrom: apiTime(state.rfrom), rightuntil: apiTime(state.runtil), maxNodes: state.maxNodes, topRows: TOP_ROWS,
    normalize: state.normalize, ...treeOptions(),
  };
  markDiffRanges();
  const key = JSON.stringify(params);
  if (key === diffKey && diffTree) {
    renderDiffGraphs();
    return;
  }
  const seq = loadSeq;
  const dseq = ++diffSeq;
  const stale = () => seq !== loadSeq || dseq !== diffSeq;
  try {
    const d = await getJSON('/api/diff', params, inflight ? inflight.signal : undefined);
    if (stale()) return;
    // A new install has nothing in the hour before: compare the halves of this one.
    const h = auto && !(+d.left) && +d.right > 0 && boxes() === shown ? halves(state.rfrom, state.runtil, Date.now() / 1000) : null;
    if (h) {
      diffFallback = `Nothing was recorded in the range before (${sideRange(state.lfrom, state.luntil)}), so ` +
        'this compares the first half of the selected range (before) with its second half (after). ' +
        'Brush two ranges on the timeline to compare others.';
      [[state.lfrom, state.luntil], [state.rfrom, state.runtil]] = h;
      return loadDiff();
    }
    diffKey = key;
    setUnit(d.unit, state.type);
    showDiff(d);
    /* what the table shows, for scripts that wait for a diff they asked for */
    $('#diff-table').dataset.ranges = `${state.lfrom}..${state.luntil} ${state.rfrom}..${state.runtil}`;
  } catch (e) {
    if (e.name === 'AbortError' || stale()) return;
    diffTree = null;
    diffSig = null;
    diffKey = '';
    $('#diff-note').hidden = true;
    $('#diff-fallback').hidden = true;
    diffGraph.setTree(null);
    diffGraph.render();
    for (const g of splitGraphs) g.setTree(null);
    $('#diff-table').tBodies[0].innerHTML = '';
    showDiffEmpty(errorText(e, 'The diff'), 'error');
    showError(errorText(e, 'The diff'));
  }
}

/** The diff view's message in place of its graphs ('' hides it); reason for scripts. */
function showDiffEmpty(text, reason) {
  const el = $('#diff-empty');
  el.hidden = !text;
  el.textContent = text;
  el.dataset.reason = reason;
  renderDiffGraphs();
}

const SIDE_COLOR = { left: 'hsl(214, 75%, 52%)', right: 'hsl(4, 75%, 52%)' };
const TIMELINE_HINT = 'drag across the chart to zoom into a time range';

/** Shades the diff's two ranges on the timeline while the diff view is open. */
function markDiffRanges() {
  const diff = state.view === 'diff';
  $('#timeline-hint').textContent = diff ? `drag to set the ${brushSide === 'left' ? 'Before (blue)' : 'After (red)'} ` +
    'range of the diff; Shift-drag sets After' : TIMELINE_HINT;
  timelineView.brushColor = diff ? SIDE_COLOR[brushSide] : '';
  if (!diff) {
    timelineView.setMarks([]);
    return;
  }
  const now = Date.now() / 1000;
  const side = (f, u, color, label) => ({ from: toSec(f, now), until: toSec(u || 'now', now), color, label });
  timelineView.setMarks([
    side(state.lfrom, state.luntil, SIDE_COLOR.left, 'before'),
    side(state.rfrom, state.runtil, SIDE_COLOR.right, 'after'),
  ].filter((m) => Number.isFinite(m.from) && Number.isFinite(m.until)));
}

/* The diff side the next drag on the timeline sets: Before first, then After. */
let brushSide = 'left';

function setBrushSide(side) {
  brushSide = side;
  for (const b of document.querySelectorAll('button[data-brush]')) {
    b.setAttribute('aria-pressed', String(b.dataset.brush === side));
  }
  markDiffRanges();
}

/** A drag on the timeline in the diff view: sets a side's range (Shift: After) and compares. */
function brushDiff(from, until, e) {
  const side = e && e.shiftKey ? 'right' : brushSide;
  const p = side === 'left' ? 'l' : 'r';
  state[`${p}from`] = String(from);
  state[`${p}until`] = String(until);
  if (!state.lquery && !state.rquery) state.lquery = state.rquery = state.query;
  diffFallback = '';
  writeURL(true);
  syncInputs();
  setBrushSide(side === 'left' ? 'right' : 'left');
  setReady(false);
  showError('');
  loadDiff().then(() => setReady(true));
}

/** The one line above the diff saying what "within noise" means for this answer. */
function diffNoteText(sig, d) {
  const s = d.significance;
  const n = Array.isArray(s.intervals) ? s.intervals : [];
  const what = s.normalize === 'rate' ? 'time per second of wall time' : 'share of its side\'s total';
  let text = `Coloured: functions whose self ${what} changed beyond noise at ${fmtConfidence(sig.confidence)} ` +
    'confidence; the rest, within noise, are grey.';
  if (s.note) text += ` ${s.note}`;
  if (n.length === 2) text += ` (${fmtInt(+n[0] || 0)} and ${fmtInt(+n[1] || 0)} intervals)`;
  return text;
}

function showDiff(d) {
  const L = +d.left || 0;
  const R = +d.right || 0;
  const s = d.significance && typeof d.significance === 'object' ? d.significance : null;
  diffSig = s ? {
    unit: normUnit(s.unit, s.normalize), confidence: +s.confidence || 0.99, note: String(s.note || ''),
    verdicts: verdictMap(d.functions),
  } : null;
  $('#diff-note').hidden = !diffSig;
  $('#diff-note').textContent = diffSig ? diffNoteText(diffSig, d) : '';
  $('#diff-note').dataset.confidence = diffSig ? String(diffSig.confidence) : '';
  $('#diff-unit').textContent = diffSig ? `${unitLabel(diffSig.unit)} · beyond noise first` : 'largest change first';
  $('#diff-scale').innerHTML = diffSig
    ? `<span class="swatch blue"></span>less <span class="swatch grey"></span>within noise <span class="swatch red"></span>more` +
      ` (self, beyond noise at ${fmtConfidence(diffSig.confidence)})`
    : '<span class="swatch blue"></span>less <span class="swatch grey"></span>same <span class="swatch red"></span>more (share of total)';
  const root = d.tree || { name: 'total', self: [0, 0], total: [0, 0] };
  // Frames are named as the diff's table names their functions (tree.js linkFunctions).
  const fns = new Set((Array.isArray(d.functions) ? d.functions : []).map((f) => String(f.name)));
  const has = fns.size ? (n) => fns.has(n) : null;
  const group = treeGroup();
  diffTree = markGroups(linkFunctions(treeArrays(root, { left: L, right: R }), has), group);
  diffGraph.setTree(diffTree);
  diffGraph.setFocus(fnId(diffTree, state.focus));
  diffGraph.setMatch(matcher ? searchTree(diffTree, matcher).byName : null);
  splitGraphs.forEach((g, k) => {
    const t = [L, R][k] ? markGroups(linkFunctions(treeArrays(diffSide(root, k)), has), group) : null;
    g.setTree(t);
    g.setFocus(fnId(t, state.focus));
    g.setMatch(matcher && t ? searchTree(t, matcher).byName : null);
  });
  $('#diff-left-label').textContent = `Before: ${sideRange(state.lfrom, state.luntil)} · ${fmtAmount(L)}`;
  $('#diff-right-label').textContent = `After: ${sideRange(state.rfrom, state.runtil)} · ${fmtAmount(R)}`;
  $('#diff-fallback').hidden = !diffFallback;
  $('#diff-fallback').textContent = diffFallback;
  $('#diff-summary').textContent = `Before ${fmtAmount(L)} → after ${fmtAmount(R)}`;
  // An empty side is said in words: every function would be "new" or "gone", which
  // says nothing about a change, so neither graph nor table is shown.
  const sel = (q) => (q ? `selector ${q}` : 'any series');
  const pick = 'Brush a range with data on the timeline (Before, then After), or type one above.';
  let msg = '';
  let reason = '';
  if (!L && !R) {
    msg = `Neither side holds samples: before (${sideRange(state.lfrom, state.luntil)}, ${sel(state.lquery)}) and ` +
      `after (${sideRange(state.rfrom, state.runtil)}, ${sel(state.rquery)}). Nothing to compare. ${pick}`;
    reason = 'both-empty';
  } else if (!L || !R) {
    const [side, f, u, q] = !L ? ['before', state.lfrom, state.luntil, state.lquery]
      : ['after', state.rfrom, state.runtil, state.rquery];
    msg = `The ${side} side (${sideRange(f, u)}, ${sel(q)}) holds no samples, so there is nothing to compare ` +
      `with: no change is shown. ${pick}`;
    reason = `${side}-empty`;
  }
  if (msg) $('#diff-note').hidden = true;
  // Functions with no self samples on either side have no change of their own to show.
  const rows = msg ? [] : diffRows(d.functions).filter((r) => r.left || r.right);
  renderDiffTable($('#diff-table'), diffSig ? sortBySignificance(rows) : rows,
    (name) => selectFunction(name, { fromTable: true }), (name) => showSeries(name), diffSig);
  markDiffRow();
  showDiffEmpty(msg, reason);
}

// ---- one function over time ----

/** Shows name's line over the current range, beside the selection's total. */
function showSeries(name) {
  if (!name || name === 'all') return;
  // name is the function as the tables name it (frames pass tree.js fnOf).
  state.series = name;
  writeURL(false);
  $('#series-panel').dataset.state = 'loading';
  loadSeries(inflight ? inflight.signal : undefined).then(() => {
    $('#series-panel').scrollIntoView({ block: 'nearest' });
  });
}

const seriesChart = new SeriesChart($('#series-chart'), tooltipEl);

async function loadSeries(signal) {
  const panel = $('#series-panel');
  const msg = $('#series-msg');
  const seq = ++seriesSeq;
  panel.hidden = !state.series;
  if (!state.series) {
    seriesChart.setData(null);
    return;
  }
  $('#series-fn').textContent = state.series;
  panel.dataset.state = 'loading';
  const now = Date.now() / 1000;
  const step = stepFor(toSec(state.from, now), toSec(state.until, now));
  try {
    const d = await getJSON('/api/function-series', {
      query: typedQuery(state.query), from: apiTime(state.from), until: apiTime(state.until), step, function: state.series,
      kind: state.seriesKind, normalize: state.seriesNorm,
    }, signal);
    if (seq !== seriesSeq) return;
    // A share's or a rate's unit is its own ("%", "seconds/s"), not the profile's.
    if (d.normalize === 'value') setUnit(d.unit, state.type);
    seriesChart.setData(d);
    const sum = (d.values || []).reduce((a, b) => a + (+b || 0), 0);
    msg.hidden = sum > 0;
    msg.textContent = sum > 0 ? '' : `${state.series} has no ${state.seriesKind} time in this range.`;
    panel.dataset.state = 'ready';
  } catch (e) {
    if (e.name === 'AbortError' || seq !== seriesSeq) return;
    seriesChart.setData(null);
    msg.hidden = false;
    msg.textContent = errorText(e, `The series of ${state.series}`);
    panel.dataset.state = 'error';
  }
}

// ---- what changed (regressions) ----

function showChangesMessage(text, reason) {
  const el = $('#changes-empty');
  el.hidden = !text;
  el.textContent = text;
  el.dataset.reason = reason;
}

const spanText = (s) => (s && s.from !== undefined && s.until !== undefined
  ? `${fmtTime(s.from / 1e9)} – ${fmtTime(s.until / 1e9)}` : '');

async function loadChanges() {
  const now = Date.now() / 1000;
  const params = {
    query: typedQuery(state.query), from: apiTime(state.from), until: apiTime(state.until), baseline: state.baseline,
    step: stepFor(toSec(state.from, now), toSec(state.until, now)),
  };
  const key = JSON.stringify(params);
  if (key === changesKey) return;
  const seq = loadSeq;
  const body = $('#changes-table').tBodies[0];
  try {
    const d = await getJSON('/api/regressions', params, inflight ? inflight.signal : undefined);
    if (seq !== loadSeq) return;
    changesKey = key;
    const unit = normUnit(d.unit, d.normalize);
    const fns = Array.isArray(d.functions) ? d.functions : [];
    const conf = +d.confidence || 0.99;
    $('#changes-range').textContent = d.window && d.baseline
      ? `${spanText(d.window)} compared with ${spanText(d.baseline)}` : '';
    const note = $('#changes-note');
    note.hidden = !d.note;
    note.textContent = !d.note ? '' : !fns.length ? d.note : `Listed: functions whose ` +
      `${d.kind === 'total' ? 'total' : 'self'} ${d.normalize === 'share' ? 'share of the total' : 'time per second'} ` +
      `changed beyond noise at ${fmtConfidence(conf)} confidence, of ${fmtInt(+d.tested || 0)} tested. ${d.note}`;
    $('#changes-list').hidden = !fns.length;
    renderChangesTable($('#changes-table'), fns, unit, conf, (name) => {
      if (['self', 'total'].includes(d.kind)) state.seriesKind = d.kind;
      syncInputs();
      showSeries(name);
    });
    $('#changes-table').dataset.key = key;
    const wn = d.window ? +d.window.intervals : NaN;
    const bn = d.baseline ? +d.baseline.intervals : NaN;
    if (bn === 0) {
      showChangesMessage(`Nothing to compare with: the baseline (${spanText(d.baseline) || state.baseline}) ` +
        'holds no data for this selector. Pick another baseline, or a range that has data before it.', 'baseline-empty');
    } else if (wn === 0) {
      showChangesMessage('The selected range holds no data for this selector: nothing to compare.', 'window-empty');
    } else if (!fns.length) {
      showChangesMessage(`No function changed beyond noise (${fmtInt(+d.tested || 0)} tested at ` +
        `${fmtConfidence(conf)} confidence).`, 'none');
    } else showChangesMessage('', '');
  } catch (e) {
    if (e.name === 'AbortError' || seq !== loadSeq) return;
    changesKey = '';
    body.innerHTML = '';
    $('#changes-list').hidden = true;
    $('#changes-note').hidden = true;
    showChangesMessage(errorText(e, 'What changed'), 'error');
    showError(errorText(e, 'What changed'));
  }
}

// ---- views ----

function showView(v, push, init = false) {
  state.view = v;
  writeURL(push);
  for (const b of document.querySelectorAll('button[data-view]')) {
    b.setAttribute('aria-selected', String(b.dataset.view === v));
  }
  for (const name of VIEWS) $(`#view-${name}`).hidden = name !== v;
  // One top table, shown beside the flame graph and beside the sandwich (to pick from).
  if (v === 'sandwich') $('#view-sandwich').prepend($('#top-panel'));
  else if (v === 'flame') $('#view-flame').prepend($('#top-panel'));
  if (v === 'flame' && tree) flame.render();
  if (v === 'sandwich') renderSandwich();
  if (v !== 'diff') markDiffRanges();
  if (v === 'diff') setBrushSide('left');
  if (v === 'diff' && !init) {
    setReady(false);
    loadDiff().then(() => setReady(true));
  }
  if (v === 'changes' && !init) {
    setReady(false);
    loadChanges().then(() => setReady(true));
  }
}

// ---- wiring ----

function applyQueryBar() {
  const range = rangeBar.read();
  if (range.error) {
    showError(range.error);
    return;
  }
  state.query = $('#query').value.trim();
  state.from = range.from;
  state.until = range.until;
  diffKey = '';
  changesKey = '';
  writeURL(true);
  syncInputs();
  loadTypes(); // the types with data in the new range
  loadReasons();
  load();
}

// Forms only group inputs: Enter is handled per field, a form is never submitted.
for (const f of document.forms) f.addEventListener('submit', (e) => e.preventDefault());
new QueryBar($('#query'), $('#query-suggest'), applyQueryBar);
const rangeBar = new RangeBar($, applyQueryBar);
$('#apply').addEventListener('click', applyQueryBar);
$('#ptype').addEventListener('change', () => {
  state.type = $('#ptype').value;
  diffKey = '';
  changesKey = '';
  writeURL(true);
  loadReasons();
  load();
});
$('#reasons-list').addEventListener('change', () => {
  state.hide = [...document.querySelectorAll('#reasons-list input:not(:checked)')].map((i) => i.value).join(',');
  diffKey = '';
  changesKey = '';
  writeURL(true);
  load();
});
/* Group-by and unnamed code change the tree, the table and the diff: all reload. */
for (const sel of document.querySelectorAll('select.group-by')) {
  sel.addEventListener('change', () => {
    state.group = sel.value;
    diffKey = '';
    writeURL(true);
    syncGroupInputs();
    load();
  });
}
for (const sel of document.querySelectorAll('select.unnamed-code')) {
  sel.addEventListener('change', () => {
    state.unnamed = sel.value;
    diffKey = '';
    writeURL(true);
    syncGroupInputs();
    load();
  });
}
$('#groupby').addEventListener('change', () => {
  state.groupBy = $('#groupby').value;
  writeURL(false);
  setReady(false);
  loadTimeline(inflight ? inflight.signal : undefined).then(() => setReady(true));
});
for (const b of document.querySelectorAll('button[data-view]')) {
  b.addEventListener('click', () => showView(b.dataset.view, true));
}
let searchTimer = 0;
$('#search').addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => {
    state.search = $('#search').value;
    writeURL(false);
    applySearch();
  }, 120);
});
$('#search').addEventListener('keydown', (e) => {
  if (e.key !== 'Enter') return;
  clearTimeout(searchTimer);
  state.search = $('#search').value;
  writeURL(false);
  applySearch();
});
$('#orient').addEventListener('click', () => {
  state.orient = state.orient === 'flame' ? 'icicle' : 'flame';
  writeURL(false);
  syncInputs();
  flame.setOrient(state.orient);
  diffGraph.setOrient(state.orient);
  for (const g of splitGraphs) g.setOrient(state.orient);
  redrawVisible();
});
$('#reset-zoom').addEventListener('click', () => zoomFlame(0));
$('#refresh').addEventListener('click', refresh);
$('#auto-refresh').addEventListener('change', () => {
  state.refresh = $('#auto-refresh').value;
  writeURL(false);
  scheduleRefresh();
});
$('#max-nodes').addEventListener('change', () => {
  state.maxNodes = $('#max-nodes').value;
  diffKey = '';
  writeURL(true);
  load();
});
initTheme($('#theme'), () => {
  redrawVisible();
  timelineView.draw();
  seriesChart.draw();
});
// Outside a text box: Escape zooms the flame graph back out, "/" goes to the search box.
document.addEventListener('keydown', (e) => {
  if (e.target.closest('input, select, textarea') || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === 'Escape' && state.view === 'flame' && tree && flame.zoom) zoomFlame(0);
  if (e.key === '/') {
    e.preventDefault();
    $('#search').focus();
  }
});
for (const b of document.querySelectorAll('button[data-brush]')) {
  b.addEventListener('click', () => setBrushSide(b.dataset.brush));
}
for (const b of document.querySelectorAll('button[data-diffmode]')) {
  b.addEventListener('click', () => {
    state.diffMode = b.dataset.diffmode;
    writeURL(false);
    renderDiffGraphs();
  });
}
$('#diff-apply').addEventListener('click', () => {
  // Times are read as the main range's boxes read them (local dates) and kept as
  // it keeps them (fixed instants as unix seconds); a bad one outlines its box.
  for (const k of DIFF_TIMES) {
    const typed = $(`#${k}`).value.trim();
    if (typed && keepTime(typed) === null) {
      $(`#${k}`).setAttribute('aria-invalid', 'true');
      showError(`${k}: invalid time "${typed}" (want now-1h, today, 2026-11-27 10:00 in your time zone, ` +
        '2026-11-27T10:00Z, or a unix time)');
      return;
    }
  }
  for (const k of ['lquery', 'rquery']) state[k] = $(`#${k}`).value.trim();
  for (const k of DIFF_TIMES) state[k] = keepTime($(`#${k}`).value.trim()) ?? '';
  diffFallback = '';
  writeURL(true);
  setReady(false);
  showError('');
  loadDiff().then(() => setReady(true));
});
for (const id of ['lquery', 'lfrom', 'luntil', 'rquery', 'rfrom', 'runtil']) {
  $(`#${id}`).addEventListener('keydown', (e) => {
    if (e.key === 'Enter') $('#diff-apply').click();
  });
}
$('#normalize').addEventListener('change', () => {
  state.normalize = $('#normalize').value;
  writeURL(true);
  setReady(false);
  showError('');
  loadDiff().then(() => setReady(true));
});
$('#baseline').addEventListener('change', () => {
  state.baseline = $('#baseline').value;
  writeURL(true);
  setReady(false);
  showError('');
  loadChanges().then(() => setReady(true));
});
for (const [id, k] of [['#series-kind', 'seriesKind'], ['#series-normalize', 'seriesNorm']]) {
  $(id).addEventListener('change', () => {
    state[k] = $(id).value;
    writeURL(false);
    loadSeries(inflight ? inflight.signal : undefined);
  });
}
$('#series-close').addEventListener('click', () => {
  state.series = '';
  writeURL(false);
  loadSeries();
});
$('#series-focus').addEventListener('click', () => showSeries(state.focus));
window.addEventListener('popstate', () => {
  Object.assign(state, readURL());
  syncInputs();
  flame.setOrient(state.orient);
  diffGraph.setOrient(state.orient);
  for (const g of splitGraphs) g.setOrient(state.orient);
  diffKey = '';
  changesKey = '';
  table.setSort(...sortOf(state.sort));
  scheduleRefresh();
  showView(state.view, false, true); // load() fetches the diff when it is the view
  loadReasons();
  load();
});

// Redraw the timeline when its width changes (the flame graphs watch their own).
let lastW = 0;
new ResizeObserver((entries) => {
  const w = Math.floor(entries[0].contentRect.width);
  if (w === lastW) return;
  lastW = w;
  requestAnimationFrame(() => {
    timelineView.draw();
    seriesChart.draw(); // as wide as the timeline
  });
}).observe($('#timeline'));

syncInputs();
scheduleRefresh();
showView(state.view, false, true);
loadTypes();
loadReasons();
labelsReady = loadGroupBy();
load();
