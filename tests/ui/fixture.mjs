// The UI tests' fixture: folded stacks of one app on two hosts in two 10 s
// windows, A (40 min ago) and B (10 min ago). From A to B `hash` grows (its
// share of the total clearly rises) and `read_input` keeps its count (its share
// falls). memcpy has two callers (hash, render), blend_[i] is inlined, and
// sys_write_[k] is a kernel frame. Every figure a test expects is computed
// here from these stacks, never written down by hand.
const common = [
  ['main;parse;read_input', 30],
  ['main;compute;sort', 10],
  ['main;render;draw', 15],
  ['main;render;draw;blend_[i]', 4],
  ['main;render;memcpy', 5],
  ['main;io;sys_write_[k]', 6],
];
export const STACKS = {
  A: {
    a: [...common, ['main;compute;hash', 20], ['main;compute;hash;memcpy', 5]],
    b: [['main;parse;read_input', 10], ['main;compute;hash', 5]],
  },
  B: {
    a: [...common, ['main;compute;hash', 90], ['main;compute;hash;memcpy', 15]],
    b: [['main;parse;read_input', 10], ['main;compute;hash', 5]],
  },
};
export const APP = 'shop';
export const LABELS = { a: { env: 'prod', host: 'a', region: 'eu' }, b: { env: 'prod', host: 'b', region: 'us' } };

export function windows(nowSec) {
  return {
    A: { from: nowSec - 2400, until: nowSec - 2390 },
    B: { from: nowSec - 600, until: nowSec - 590 },
  };
}

// Pushes the fixture through POST /ingest (folded text), as any client would.
export async function ingest(url, nowSec) {
  const w = windows(nowSec);
  for (const win of ['A', 'B']) {
    for (const host of ['a', 'b']) {
      const labels = Object.entries(LABELS[host]).map(([k, v]) => `${k}=${v}`).join(',');
      const body = STACKS[win][host].map(([s, n]) => `${s} ${n}`).join('\n') + '\n';
      const q = new URLSearchParams({ name: `${APP}{${labels}}`, from: w[win].from, until: w[win].until });
      const r = await fetch(`${url}/ingest?${q}`, { method: 'POST', body });
      if (r.status !== 200) throw new Error(`ingest ${win}/${host}: ${r.status} ${await r.text()}`);
    }
  }
}

// Samples of the chosen windows and hosts: [{stack: [frames], n}].
export function samples(wins = ['A', 'B'], hosts = ['a', 'b']) {
  const out = [];
  for (const w of wins) for (const h of hosts) {
    for (const [s, n] of STACKS[w][h]) out.push({ stack: s.split(';'), n });
  }
  return out;
}

export const sum = (ss) => ss.reduce((t, s) => t + s.n, 0);

// Per function: self (leaf samples) and total (samples whose stack holds it,
// each sample counted once).
export function perFunction(ss) {
  const m = new Map();
  const row = (f) => m.get(f) || (m.set(f, { self: 0, total: 0 }), m.get(f));
  for (const { stack, n } of ss) {
    row(stack[stack.length - 1]).self += n;
    for (const f of new Set(stack)) row(f).total += n;
  }
  return m;
}

// Samples whose stack has at least one frame for which pred is true.
export const matched = (ss, pred) => sum(ss.filter((s) => s.stack.some(pred)));

// Total of the flame-graph node at a path (root-first frame names).
export function pathTotal(ss, path) {
  return sum(ss.filter((s) => path.every((f, i) => s.stack[i] === f)));
}

// Names above fn (callers, transitively) and below it (callees) in any stack.
export function sandwich(ss, fn) {
  const callers = new Set(), callees = new Set();
  for (const { stack } of ss) {
    const i = stack.indexOf(fn);
    if (i < 0) continue;
    stack.slice(0, i).forEach((f) => callers.add(f));
    stack.slice(i + 1).forEach((f) => callees.add(f));
  }
  return { callers, callees };
}
