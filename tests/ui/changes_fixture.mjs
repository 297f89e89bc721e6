// The "what changed" tests' fixture (changes_test.mjs): one service profiled in
// stored intervals of STEP seconds, N before a known moment and N after it. Every
// function costs the same in both halves, interval by interval (a fixed wobble, so
// the intervals differ from each other as real ones do), except `slow_path`, whose
// self samples per interval go from SLOW.before to SLOW.after at the moment.
// Measured as time per second, slow_path is then the only function that changed;
// every figure a test expects is computed here from these stacks.
export const APP = 'billing';
export const LABELS = { env: 'prod', host: 'c1' };
export const STEP = 10; // seconds per stored profile
export const N = 12; // intervals on each side
export const PLANTED = 'slow_path';
export const SLOW = { before: 100, after: 160 };
const WOBBLE = [0, 30, -20, 10, -30, 20, 0, -10, 30, -20, 10, -10];

/** The folded stacks of interval k (0..N-1) of a side ('before' | 'after'). */
export function stacks(side, k) {
  const w = WOBBLE[k % WOBBLE.length];
  return [
    ['main;serve;parse_request', 300 + w],
    ['main;serve;render_page', 200 - w / 2],
    ['main;serve;render_page;memcpy', 40 + (k % 4) * 5],
    [`main;serve;${PLANTED}`, SLOW[side]],
    ['main;gc', 50 + (k % 3) * 5],
  ];
}

/**
 * The times, in unix seconds: S is 20 minutes ago (a multiple of STEP); the "before"
 * intervals cover [S, S + N·STEP), the "after" ones start a gap of one STEP later.
 * The window a test looks at holds every "after" interval and no "before" one, and
 * the previous window of the same length (the default baseline) every "before" one,
 * with STEP/2 to spare at each edge.
 */
export function times(nowSec) {
  const S = Math.floor(nowSec / STEP) * STEP - 1200;
  const afterStart = S + (N + 1) * STEP;
  const start = (side, k) => (side === 'before' ? S : afterStart) + k * STEP;
  const from = afterStart - STEP / 2;
  const until = afterStart + N * STEP + STEP / 2;
  return { S, start, from, until, baselineFrom: from - (until - from), baselineUntil: from };
}

// Pushes every interval through POST /ingest (folded text), as any client would.
export async function ingest(url, nowSec) {
  const t = times(nowSec);
  const labels = Object.entries(LABELS).map(([k, v]) => `${k}=${v}`).join(',');
  for (const side of ['before', 'after']) {
    for (let k = 0; k < N; k++) {
      const body = stacks(side, k).map(([s, n]) => `${s} ${n}`).join('\n') + '\n';
      const from = t.start(side, k);
      const q = new URLSearchParams({ name: `${APP}{${labels}}`, from, until: from + STEP });
      const r = await fetch(`${url}/ingest?${q}`, { method: 'POST', body });
      if (r.status !== 200) throw new Error(`ingest ${side}/${k}: ${r.status} ${await r.text()}`);
    }
  }
}

/** Sum of the samples of a side whose stack satisfies pred(frames). */
export function sideSum(side, pred = () => true) {
  let n = 0;
  for (let k = 0; k < N; k++) {
    for (const [s, c] of stacks(side, k)) if (pred(s.split(';'))) n += c;
  }
  return n;
}

/** Self samples of fn on a side (it is the innermost frame). */
export const selfOf = (side, fn) => sideSum(side, (f) => f[f.length - 1] === fn);

/** Every function that has self samples. */
export const leaves = () => [...new Set(stacks('before', 0).map(([s]) => s.split(';').pop()))];
