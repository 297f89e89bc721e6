// Reads the time expressions the API accepts (unix s/ms/µs/ns, "now", "now-1h30m")
// so the page can choose a timeline step and default diff ranges.

const UNIT = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/** "1h30m" -> 5400 (seconds), NaN when not a duration. */
export function durationSec(s) {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/y;
  let total = 0;
  let pos = 0;
  if (!s) return NaN;
  while (pos < s.length) {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (!m) return NaN;
    total += parseFloat(m[1]) * UNIT[m[2]];
    pos = re.lastIndex;
  }
  return total;
}

/** A time expression -> unix seconds, NaN when unreadable. */
export function toSec(expr, nowSec) {
  const s = String(expr ?? '').trim();
  if (s === 'now') return nowSec;
  const rel = /^now-(.+)$/.exec(s);
  if (rel) return nowSec - durationSec(rel[1]);
  if (/^\d+$/.test(s)) {
    const n = Number(s);
    if (n >= 1e17) return n / 1e9;
    if (n >= 1e14) return n / 1e6;
    if (n >= 1e11) return n / 1e3;
    return n;
  }
  return NaN;
}

/** A timeline step of about 120 bars for a range, in whole 10 s units ("60s"). */
export function stepFor(fromSec, untilSec) {
  const span = untilSec - fromSec;
  if (!(span > 0)) return '10s';
  return `${Math.max(10, Math.ceil(span / 120 / 10) * 10)}s`;
}

/** 5400 -> "1h30m" (whole seconds; the API reads it back in "now-1h30m"). */
export function fmtDuration(sec) {
  let s = Math.round(sec);
  let out = '';
  for (const [u, n] of [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]]) {
    if (s >= n) {
      out += Math.floor(s / n) + u;
      s %= n;
    }
  }
  return out || '0s';
}
