// Reads the time expressions the API accepts, by the server's one rule
// (src/base/timespec.c, docs/api.md "Limits: time and values"): "now", "now-1h30m",
// "now+10m" (whole numbers of ns us ms s m h d w), or a unix number whose
// magnitude tells the unit (below 1e11 s, 1e14 ms, 1e17 µs, else ns), refused
// past INT64_MAX ns. The page uses it to choose a timeline step and default
// diff ranges; tests/unit/data/times.tsv holds the rows both sides must agree on.

const S = 1000000000n;
const UNIT_NS = { ns: 1n, us: 1000n, ms: 1000000n, s: S, m: 60n * S, h: 3600n * S, d: 86400n * S,
  w: 604800n * S };
const MAX = (1n << 63n) - 1n;
const MIN = -(1n << 63n);

/** "1h30m" -> nanoseconds (BigInt), null unless whole number+unit terms within int64. */
function termsNs(s) {
  const re = /(\d+)(ns|us|ms|s|m|h|d|w)/y;
  let total = 0n;
  let pos = 0;
  if (!s) return null;
  while (pos < s.length) {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (!m) return null;
    const n = BigInt(m[1]);
    if (n > MAX || n * UNIT_NS[m[2]] > MAX) return null;
    total += n * UNIT_NS[m[2]];
    if (total > MAX) return null;
    pos = re.lastIndex;
  }
  return total;
}

/** A time expression -> unix nanoseconds (BigInt), or null when the server would refuse it. */
export function parseTimeNs(expr, nowNs) {
  const s = String(expr ?? '');
  if (s === 'now') return nowNs;
  const rel = /^now([+-])(.*)$/.exec(s);
  if (rel) {
    const d = termsNs(rel[2]);
    if (d === null) return null;
    const t = rel[1] === '-' ? nowNs - d : nowNs + d;
    return t < MIN || t > MAX ? null : t;
  }
  if (!/^\d{1,19}$/.test(s)) return null;
  const v = BigInt(s);
  const mul = v < 100000000000n ? S : v < 100000000000000n ? 1000000n
    : v < 100000000000000000n ? 1000n : 1n;
  return v * mul > MAX ? null : v * mul;
}

/** "1h30m" -> 5400 (seconds), NaN when not a duration the server reads after "now-". */
export function durationSec(s) {
  const ns = termsNs(s);
  return ns === null ? NaN : Number(ns / 1000000n) / 1000;
}

/** A time expression -> unix seconds (to the ms), NaN when unreadable. */
export function toSec(expr, nowSec) {
  const ns = parseTimeNs(String(expr ?? '').trim(), BigInt(Math.round(nowSec * 1000)) * 1000000n);
  return ns === null ? NaN : Number(ns / 1000000n) / 1000;
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
