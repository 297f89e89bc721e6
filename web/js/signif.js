// What the noise-aware answers (/api/diff's significance, /api/regressions) mean on
// the page: which function changed beyond noise, the order the diff table shows,
// values in the normalisation's unit (percentage points of the total, or amount per
// second of wall time), and the small SVG lines (sparklines, the function series).
// Pure functions: web/test/signif.test.mjs tests them without a browser.

import { fmtBytes, fmtNanos } from './format.js';

/** A row's {left,right,change,low,high,verdict} or null when the server sent none. */
function diffOf(d) {
  if (!d || typeof d !== 'object' || !['up', 'down', 'noise'].includes(d.verdict)) return null;
  const num = (v) => (Number.isFinite(+v) ? +v : 0);
  return {
    left: num(d.left), right: num(d.right), change: num(d.change), low: num(d.low), high: num(d.high),
    verdict: d.verdict,
  };
}

/**
 * The verdicts of a /api/diff answer's "functions", by name: {self, total}, each a
 * diffOf() or null. An inlined function's row has no "_[i]" (as the top table), so
 * verdictOf() also tries the name without it.
 */
export function verdictMap(functions) {
  const m = new Map();
  for (const r of Array.isArray(functions) ? functions : []) {
    m.set(String(r.name), { self: diffOf(r.selfDiff), total: diffOf(r.totalDiff) });
  }
  return m;
}

/** The entry of verdictMap() for a tree frame's name, or undefined. */
export function verdictOf(map, name) {
  return map.get(name) ?? (name.endsWith('_[i]') ? map.get(name.slice(0, -4)) : undefined);
}

/** True when a verdict says the change is beyond noise. */
export const significant = (d) => !!d && (d.verdict === 'up' || d.verdict === 'down');

/**
 * The diff table's order: rows whose self change is beyond noise first, largest
 * |change| first; then the rest in the order they came (the server's: largest
 * share change first). Does not modify rows.
 */
export function sortBySignificance(rows) {
  const sig = [];
  const rest = [];
  for (const r of rows) (significant(r.selfDiff) ? sig : rest).push(r);
  sig.sort((a, b) => Math.abs(b.selfDiff.change) - Math.abs(a.selfDiff.change));
  return sig.concat(rest);
}

/**
 * The unit of a normalised value as the page writes it: "pp" for a share, else
 * "<base>/s". unit is the answer's (significance.unit, or the regressions' unit),
 * normalize the answer's normalisation.
 */
export function normUnit(unit, normalize) {
  if (normalize === 'share' || unit === 'pp' || unit === '%') return 'pp';
  const u = String(unit || 'samples');
  return u.endsWith('/s') ? u : `${u}/s`;
}

function num3(v) {
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(2);
}

/**
 * A level (not a change) in a normalised unit: "12.40%" of the total, "1.25 ms/s",
 * "0.48 CPU s/s", "35.0 samples/s".
 */
export function fmtLevel(v, unit) {
  if (unit === 'pp') return `${v.toFixed(2)}%`;
  const base = unit.replace(/\/s$/, '');
  if (base === 'nanoseconds') {
    // CPU time per second of wall time: "0.48 CPU s/s" reads as "half a core".
    return Math.abs(v) >= 1e8 ? `${num3(v / 1e9)} CPU s/s` : `${fmtNanos(v)}/s`;
  }
  if (base === 'seconds') return `${num3(v)} CPU s/s`;
  if (base === 'bytes') return `${fmtBytes(v)}/s`;
  return `${num3(v)} ${base}/s`;
}

/** What a bare number of fmtBare() counts: "% / pp", "CPU s/s", "samples/s"... */
export function unitLabel(unit) {
  if (unit === 'pp') return '% of total (change in pp)';
  const base = unit.replace(/\/s$/, '');
  if (base === 'nanoseconds' || base === 'seconds') return 'CPU s/s';
  if (base === 'bytes') return 'bytes/s';
  return `${base}/s`;
}

/**
 * A value without its unit (the table's header names it, unitLabel()), so the
 * narrow columns fit: "12.40", "0.48", "1.5 MiB". signed: with + or −.
 */
export function fmtBare(v, unit, signed = false) {
  const a = Math.abs(v);
  let t;
  if (unit === 'pp') t = a.toFixed(2);
  else {
    const base = unit.replace(/\/s$/, '');
    if (base === 'nanoseconds') t = num3(a / 1e9);
    else if (base === 'bytes') t = fmtBytes(a);
    else t = num3(a);
  }
  if (!signed) return v < 0 ? `−${t}` : t;
  return (v > 0 ? '+' : v < 0 ? '−' : '±') + t;
}

/** A change, signed: "+1.25 pp", "−0.40 CPU s/s". */
export function fmtChange(v, unit) {
  const s = v > 0 ? '+' : v < 0 ? '−' : '±';
  if (unit === 'pp') return `${s}${Math.abs(v).toFixed(2)} pp`;
  return s + fmtLevel(Math.abs(v), unit);
}

/** The interval of a change: "+0.80 … +1.70 pp". */
export function fmtInterval(low, high, unit) {
  const a = fmtChange(low, unit);
  const b = fmtChange(high, unit);
  if (unit === 'pp') return `${a.replace(/ pp$/, '')} … ${b}`;
  return `${a} … ${b}`;
}

/** A relative change as "+60%" ("new" when before was 0, "" when unknown). */
export function fmtRelative(rel) {
  if (rel === null || rel === undefined || !Number.isFinite(+rel)) return '';
  const p = 100 * rel;
  return `${p > 0 ? '+' : p < 0 ? '−' : '±'}${Math.abs(p) >= 10 ? Math.abs(p).toFixed(0) : Math.abs(p).toFixed(1)}%`;
}

/** "99%" for 0.99, "99.9%" for 0.999. */
export function fmtConfidence(c) {
  const p = 100 * (+c || 0.99);
  return `${Number(p.toFixed(2))}%`;
}

/**
 * Points of a line through values on a W x H box (y grows down, max at the top):
 * "x,y x,y …". max defaults to the largest value (a flat zero line sits at the bottom).
 */
export function linePoints(values, W, H, max) {
  const n = values.length;
  const top = max > 0 ? max : Math.max(0, ...values.map((v) => +v || 0));
  const pts = [];
  for (let k = 0; k < n; k++) {
    const x = n > 1 ? (k * W) / (n - 1) : W / 2;
    const v = +values[k] || 0;
    const y = top > 0 ? H - (v / top) * H : H;
    pts.push(`${x.toFixed(1)},${y.toFixed(1)}`);
  }
  return pts.join(' ');
}

/** A small SVG line of values (the regressions table's series), with its data. */
export function sparkline(values, W = 90, H = 22) {
  const v = Array.isArray(values) ? values : [];
  const sum = v.reduce((a, b) => a + (+b || 0), 0);
  return `<svg class="spark" width="${W}" height="${H}" viewBox="0 -1 ${W} ${H + 2}" aria-hidden="true"` +
    ` data-points="${v.length}" data-sum="${sum}"><polyline points="${linePoints(v, W, H)}"/></svg>`;
}

/** Title text of a verdict for tooltips and cells. */
export function verdictText(d, confidence) {
  if (!d) return '';
  const c = fmtConfidence(confidence);
  if (d.verdict === 'up') return `up, beyond noise at ${c}`;
  if (d.verdict === 'down') return `down, beyond noise at ${c}`;
  return `within noise at ${c}`;
}
