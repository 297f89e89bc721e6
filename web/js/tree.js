// The flame tree as typed arrays, built once per answer, so the flame graph, search
// and the sandwich view never walk JSON objects again. (The top table's rows come
// from the server, computed over the whole merge: topRows links them to the tree.)
//
// Nodes are stored in pre-order: node 0 is the root, a node's subtree is the index
// range [i, end[i]), and nodes of one depth appear left to right. That is what lets
// the renderer skip a whole subtree that is too narrow to see with one jump.
//
//   x = start[i] .. start[i] + size[i]   (in samples, or in shares for a diff)
//   y = depth[i]

import { colorIndex, groupColor, PAL_ROOT } from './colors.js';
import { durationSec, fmtDuration, toSec } from './timeparse.js';

/**
 * Typed arrays of a /api/profile tree (numbers) or a /api/diff tree ([left, right] pairs).
 * For a diff, lTotal/rTotal are the answer's "left"/"right" totals and a frame's
 * size is its mean share of both sides, so neither side dominates by volume.
 * rootName names node 0 ("all" for a whole profile, the function for a sandwich).
 * minSize > 0 leaves out subtrees smaller than that (a quick tree of only what an
 * unzoomed graph can draw; x offsets stay those of the full tree).
 */
export function treeArrays(root, diff = null, rootName = 'all', minSize = 0) {
  const names = [];
  const nameIds = new Map();
  const colorOf = []; // by name id: computed once per distinct name, not per frame
  const intern = (str) => {
    let id = nameIds.get(str);
    if (id === undefined) {
      id = names.length;
      names.push(str);
      nameIds.set(str, id);
    }
    return id;
  };
  let cap = 16384;
  let a = alloc(cap, !!diff);
  let n = 0;
  const L = diff ? diff.left : 0;
  const R = diff ? diff.right : 0;
  // A diff frame's width: its mean share of both sides (one side when the other is empty).
  const wl = L ? (R ? 0.5 : 1) / L : 0;
  const wr = R ? (L ? 0.5 : 1) / R : 0;
  const sizeOf = diff
    ? (nd) => (nd.total ? (+nd.total[0] || 0) * wl + (+nd.total[1] || 0) * wr : 0)
    : (nd) => +nd.total || 0;
  // An explicit stack (nodes, and parent/depth/start/size in typed arrays): no
  // allocation per frame, and each frame's size is computed once.
  const sNode = [root];
  let sInt = new Int32Array(2 * 1024); // parent, depth per entry
  let sNum = new Float64Array(2 * 1024); // start, size per entry
  sInt[0] = -1;
  sInt[1] = 0;
  sNum[0] = 0;
  sNum[1] = sizeOf(root);
  let sp = 1;
  let kidSize = new Float64Array(64);
  while (sp > 0) {
    sp--;
    const node = sNode.pop();
    const parent = sInt[2 * sp];
    const depth = sInt[2 * sp + 1];
    const start = sNum[2 * sp];
    const size = sNum[2 * sp + 1];
    if (n === cap) {
      cap *= 2;
      a = grow(a, cap);
    }
    const i = n++;
    const name = parent < 0 ? rootName : String(node.name);
    const module = node.module;
    const id = intern(name);
    a.nameIdx[i] = id;
    a.modIdx[i] = module ? intern(String(module)) : -1;
    a.parent[i] = parent;
    a.depth[i] = depth;
    a.start[i] = start;
    a.size[i] = size;
    if (diff) {
      const t = node.total || [0, 0];
      const sf = node.self || [0, 0];
      a.ltotal[i] = +t[0] || 0;
      a.rtotal[i] = +t[1] || 0;
      a.lself[i] = +sf[0] || 0;
      a.rself[i] = +sf[1] || 0;
      a.total[i] = a.ltotal[i] + a.rtotal[i];
      a.self[i] = a.lself[i] + a.rself[i];
    } else {
      a.total[i] = +node.total || 0;
      a.self[i] = +node.self || 0;
    }
    if (module) a.color[i] = colorIndex(name, module);
    else {
      if (colorOf[id] === undefined) colorOf[id] = colorIndex(name);
      a.color[i] = colorOf[id];
    }
    if (parent < 0 && rootName === 'all') a.color[i] = PAL_ROOT;
    a.inlined[i] = name.endsWith('_[i]') ? 1 : 0;
    const kids = node.children;
    if (!Array.isArray(kids)) continue;
    const m = kids.length;
    if (m > kidSize.length) kidSize = new Float64Array(m * 2);
    if (2 * (sp + m) > sInt.length) {
      const bigger = Math.max(2 * sInt.length, 2 * (sp + m));
      const i2 = new Int32Array(bigger);
      i2.set(sInt);
      sInt = i2;
      const n2 = new Float64Array(bigger);
      n2.set(sNum);
      sNum = n2;
    }
    // Children get consecutive x ranges; pushed last-first so they pop in order.
    let x = start;
    for (let k = 0; k < m; k++) {
      kidSize[k] = sizeOf(kids[k]);
      x += kidSize[k];
    }
    for (let k = m - 1; k >= 0; k--) {
      x -= kidSize[k];
      if (kidSize[k] < minSize) continue;
      sNode.push(kids[k]);
      sInt[2 * sp] = i;
      sInt[2 * sp + 1] = depth + 1;
      sNum[2 * sp] = x;
      sNum[2 * sp + 1] = kidSize[k];
      sp++;
    }
  }
  return finish(a, n, names, !!diff);
}

const FIELDS = ['nameIdx', 'modIdx', 'parent', 'depth', 'start', 'size', 'total', 'self',
  'color', 'inlined'];
const DIFF_FIELDS = ['ltotal', 'rtotal', 'lself', 'rself'];

function alloc(cap, diff) {
  const a = {
    nameIdx: new Int32Array(cap), modIdx: new Int32Array(cap), parent: new Int32Array(cap),
    depth: new Int32Array(cap), start: new Float64Array(cap), size: new Float64Array(cap),
    total: new Float64Array(cap), self: new Float64Array(cap), color: new Uint8Array(cap),
    inlined: new Uint8Array(cap),
  };
  if (diff) for (const f of DIFF_FIELDS) a[f] = new Float64Array(cap);
  return a;
}

function grow(a, cap) {
  const b = {};
  for (const f of Object.keys(a)) {
    b[f] = new a[f].constructor(cap);
    b[f].set(a[f]);
  }
  return b;
}

function finish(a, n, names, diff) {
  const t = { n, names, diff };
  for (const f of FIELDS.concat(diff ? DIFF_FIELDS : [])) t[f] = a[f].subarray(0, n);
  t.end = new Int32Array(n);
  for (let i = 0; i < n; i++) t.end[i] = i + 1;
  for (let i = n - 1; i > 0; i--) {
    const p = t.parent[i];
    if (t.end[i] > t.end[p]) t.end[p] = t.end[i];
  }
  let maxDepth = 0;
  for (let i = 0; i < n; i++) if (t.depth[i] > maxDepth) maxDepth = t.depth[i];
  t.maxDepth = maxDepth;
  linkFunctions(t);
  return t;
}

/**
 * One name per function in every view: a frame is named as the server's tables
 * name its function. The tree marks an inlined frame "f_[i]"; the top and diff
 * tables count it under "f" (profile/top.c, as `pprof -top`). But a name that
 * came in with the suffix (folded stacks ingested as text) is a function of
 * that name in the tables too. So t.fn[name id] is the id of the function's
 * name: the frame's own name when the table has it (has(name)), else the name
 * without "_[i]" (interned into t.names when the tree has no frame of it).
 * Without a table (has absent) an inlined frame's function is its bare name.
 */
export function linkFunctions(t, has = null) {
  const n = t.names.length;
  let ids = null; // name -> id, made on the first inlined name
  t.fn = new Int32Array(n);
  for (let id = 0; id < n; id++) {
    const name = t.names[id];
    t.fn[id] = id;
    if (!name.endsWith('_[i]') || (has && has(name))) continue;
    if (!ids) ids = new Map(t.names.map((x, k) => [x, k]));
    const bare = name.slice(0, -4);
    let b = ids.get(bare);
    if (b === undefined) {
      b = t.names.length;
      t.names.push(bare);
      ids.set(bare, b);
    }
    t.fn[id] = b;
  }
  if (t.names.length > n) {
    const grown = new Int32Array(t.names.length);
    grown.set(t.fn);
    for (let id = n; id < t.names.length; id++) grown[id] = id;
    t.fn = grown;
  }
  return t;
}

/**
 * Marks the nodes a group-by added (groupBy=LABEL: each stack starts with a node
 * "LABEL=VALUE", docs/api.md): t.group[i] = 1 and their own colour (colors.js
 * groupColor), so a group never reads as code. Only the root's children of a
 * profile or diff tree are groups (a function may be named "operator="); anyDepth
 * for a sandwich's callers, where the group is the outermost caller wherever it is.
 * Returns t; t.groupBy is label ('' when none).
 */
export function markGroups(t, label, anyDepth = false) {
  t.group = new Uint8Array(t.n);
  t.groupBy = label || '';
  if (!label) return t;
  const prefix = `${label}=`;
  for (let i = 1; i < t.n; i++) {
    if ((anyDepth || t.depth[i] === 1) && nameOf(t, i).startsWith(prefix)) {
      t.group[i] = 1;
      t.color[i] = groupColor(nameOf(t, i));
    }
  }
  return t;
}

/** "process=python3" -> ['process', 'python3'] for a group node's name. */
export function groupParts(name) {
  const k = name.indexOf('=');
  return k < 0 ? [name, ''] : [name.slice(0, k), name.slice(k + 1)];
}

/** The function (as the tables name it) of node i. */
export const fnOf = (t, i) => t.names[t.fn[t.nameIdx[i]]];

/** The name id of function fn in t (what FlameGraph.setFocus takes), -1 when absent. */
export const fnId = (t, fn) => (t && fn ? t.names.indexOf(fn) : -1);

/** The name of node i. */
export const nameOf = (t, i) => t.names[t.nameIdx[i]];

/**
 * Calls visit(i, outer) for every node in pre-order; outer is true when no ancestor
 * of i satisfies mark(i). This is how a sample is counted once when several frames
 * of its stack qualify (recursion, several search matches).
 */
function walkOutermost(t, mark, visit) {
  const stack = [];
  let active = 0;
  for (let i = 0; i < t.n; i++) {
    while (stack.length && t.end[stack[stack.length - 1]] <= i) {
      if (mark(stack.pop())) active--;
    }
    const m = mark(i);
    visit(i, m && active === 0);
    if (m) active++;
    stack.push(i);
  }
}

/**
 * The top table's rows from the "top" of a /api/profile?format=tree&topRows=N answer
 * (format=topjson's object): the server's table
 * over the whole merge (profile/top.c, as `pprof -top`), not over this tree, which
 * the server pruned to maxNodes. Returns [{name, self, total, nameIdx, first}]:
 * nameIdx is the name's id in t and first one of its frames (for focus and colour),
 * both -1 when the tree kept no frame of the function.
 */
export function topRows(top, t) {
  const ids = new Map();
  const first = new Int32Array(t ? t.names.length : 0).fill(-1);
  if (t) {
    t.names.forEach((n, id) => { if (!ids.has(n)) ids.set(n, id); });
    for (let i = 1; i < t.n; i++) {
      const id = t.nameIdx[i];
      if (first[id] < 0) first[id] = i;
      if (t.fn && first[t.fn[id]] < 0) first[t.fn[id]] = i; // an inlined-only function's colour
    }
  }
  const rows = top && Array.isArray(top.rows) ? top.rows : [];
  return rows.map((r) => {
    const name = String(r.name);
    const id = ids.has(name) ? ids.get(name) : -1;
    return { name, self: +r.self || 0, total: +r.total || 0, nameIdx: id, first: id < 0 ? -1 : first[id] };
  });
}

/**
 * The diff table's rows from a /api/diff answer's "functions": the server's
 * per-function table over both whole merges (not this tree, which the server
 * pruned to maxNodes), in the server's order. Returns [{name, left, right, delta,
 * selfDiff, totalDiff}]: self on each side, the change of its share of all samples
 * (right% - left%, percentage points), and the server's noise verdicts (null from a
 * server that judges none), as the server computed them.
 */
export function diffRows(functions) {
  const rows = Array.isArray(functions) ? functions : [];
  return rows.map((r) => ({
    name: String(r.name),
    left: +(r.self && r.self[0]) || 0,
    right: +(r.self && r.self[1]) || 0,
    delta: +r.shareChange || 0,
    selfDiff: r.selfDiff && typeof r.selfDiff === 'object' ? r.selfDiff : null,
    totalDiff: r.totalDiff && typeof r.totalDiff === 'object' ? r.totalDiff : null,
  }));
}

/** Change of node i's share of the total, right% - left%, in percentage points. */
export function changeOf(t, i) {
  if (i === 0) return 0; // the root is 100% of both sides by definition
  const L = t.ltotal[0];
  const R = t.rtotal[0];
  return 100 * ((R ? t.rtotal[i] / R : 0) - (L ? t.ltotal[i] / L : 0));
}

/**
 * Compiles the search box text: "/re/flags" is a regular expression, anything else a
 * case-insensitive substring. Returns {test(name)} or {error} for a bad regex, or
 * null for an empty box.
 */
export function compileSearch(text) {
  const s = (text || '').trim();
  if (!s) return null;
  const re = /^\/(.+)\/([a-z]*)$/.exec(s);
  if (re) {
    try {
      const rx = new RegExp(re[1], re[2].replace(/[gy]/g, '') || 'i');
      return { test: (name) => rx.test(name) };
    } catch (e) {
      return { error: `Bad regular expression ${s}: ${e.message}` };
    }
  }
  const low = s.toLowerCase();
  return { test: (name) => name.toLowerCase().includes(low) };
}

/**
 * Which names match the search (Uint8Array by name id) and the matched share:
 * the samples under a matching frame with no matching ancestor, so each sample
 * counts once however many of its frames match.
 */
export function searchTree(t, matcher) {
  const byName = new Uint8Array(t.names.length);
  for (let id = 0; id < t.names.length; id++) byName[id] = matcher.test(t.names[id]) ? 1 : 0;
  let matched = 0;
  walkOutermost(t, (i) => i > 0 && byName[t.nameIdx[i]] === 1, (i, outer) => {
    if (outer) matched += t.total[i];
  });
  return { byName, matched };
}

/**
 * Sandwich trees for the function named fn (as the tables name it: its inlined
 * frames count too): callees merges the subtrees under every outermost frame of fn (a frame with no fn above it); callers is the inverted tree
 * of the stacks above those same frames. Both count each sample once however deep
 * fn recurses. Returns plain trees {name, module, self, total, children} or null: each
 * frame keeps the module of the first frame of its name merged into it, so a function
 * has the same colour here as in the flame graph.
 */
export function sandwich(t, fn) {
  const id = fnId(t, fn);
  if (id < 0) return null;
  const callees = newNode(fn);
  const callers = newNode(fn);
  const mod = (i) => (t.modIdx[i] >= 0 ? t.names[t.modIdx[i]] : '');
  const target = new Array(t.n);
  let found = false;
  walkOutermost(t, (i) => i > 0 && t.fn[t.nameIdx[i]] === id, (i, outer) => {
    if (!outer) return;
    found = true;
    callers.module ||= mod(i);
    callees.module ||= mod(i);
    const w = t.total[i];
    // Callers: walk up from the parent; the topmost caller keeps the samples as self.
    callers.total += w;
    let node = callers;
    let p = t.parent[i];
    if (p <= 0) callers.self += w;
    for (; p > 0; p = t.parent[p]) {
      node = child(node, nameOf(t, p), mod(p));
      node.total += w;
      if (t.parent[p] <= 0) node.self += w;
    }
    // Callees: merge the subtree [i, end[i]) into the fn root.
    target[i] = callees;
    callees.total += w;
    callees.self += t.self[i];
    for (let k = i + 1; k < t.end[i]; k++) {
      const c = child(target[t.parent[k]], nameOf(t, k), mod(k));
      c.total += t.total[k];
      c.self += t.self[k];
      target[k] = c;
    }
  });
  if (!found) return null;
  return { callers: freeze(callers), callees: freeze(callees) };
}

function newNode(name, module = '') {
  return { name, module, self: 0, total: 0, kids: new Map() };
}

function child(node, name, module) {
  let c = node.kids.get(name);
  if (!c) {
    c = newNode(name, module);
    node.kids.set(name, c);
  }
  return c;
}

// Map children -> sorted arrays (largest first), as the server sends them.
function freeze(node) {
  const out = { name: node.name, module: node.module, self: node.self, total: node.total, children: [] };
  const todo = [[node, out]];
  while (todo.length) {
    const [src, dst] = todo.pop();
    for (const c of src.kids.values()) {
      const o = { name: c.name, module: c.module, self: c.self, total: c.total, children: [] };
      dst.children.push(o);
      todo.push([c, o]);
    }
    dst.children.sort((x, y) => y.total - x.total || (x.name < y.name ? -1 : 1));
  }
  return out;
}

/**
 * One side of a /api/diff tree (k = 0: left, before; 1: right, after) as a plain
 * profile tree {name, module, self, total, children}: the frames with samples on
 * that side, with that side's numbers. The side-by-side view draws both from the
 * one diff answer (one merge, pruned alike), so a frame has the same name and
 * module, hence colour, on both sides.
 */
export function diffSide(root, k) {
  const val = (v) => (Array.isArray(v) ? +v[k] || 0 : 0);
  const out = { name: root.name, module: root.module, self: val(root.self), total: val(root.total), children: [] };
  const todo = [[root, out]];
  while (todo.length) {
    const [src, dst] = todo.pop();
    for (const c of Array.isArray(src.children) ? src.children : []) {
      const total = val(c.total);
      if (total <= 0) continue;
      const o = { name: c.name, module: c.module, self: val(c.self), total, children: [] };
      dst.children.push(o);
      todo.push([c, o]);
    }
    dst.children.sort((x, y) => y.total - x.total);
  }
  return out;
}

/**
 * The two halves of a range (from, until: time expressions; now: unix s): a
 * range ending "now" as "now-X"/"now-X/2"/"now" (so a link keeps following
 * now), else unix seconds. Returns [[from, mid], [mid, until]] or null.
 */
export function halves(from, until, nowSec) {
  const rel = /^now-(.+)$/.exec(from);
  const d = rel && until === 'now' ? durationSec(rel[1]) : NaN;
  if (d >= 2) {
    const mid = `now-${fmtDuration(Math.floor(d / 2))}`;
    return [[from, mid], [mid, 'now']];
  }
  const f = toSec(from, nowSec);
  const u = toSec(until, nowSec);
  if (!(Number.isFinite(f) && Number.isFinite(u) && u - f >= 2)) return null;
  const mid = String(Math.floor((f + u) / 2));
  return [[String(Math.floor(f)), mid], [mid, String(Math.ceil(u))]];
}
