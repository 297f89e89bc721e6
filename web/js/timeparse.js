// Reads the time expressions the API accepts, by the server's one rule
// (src/base/timespec.c, docs/api.md "Limits: time and values"): an anchor "now",
// "today" or "yesterday" with an optional offset ("now-1h30m", "today+9h": whole
// numbers of ns us ms s m h d w), an ISO-8601 date or time ("2026-11-27",
// "2026-11-27T10:00", "2026-11-27 10:00:05.5+01:00"), or a unix number whose
// magnitude tells the unit (below 1e11 s, 1e14 ms, 1e17 µs, else ns); anything
// outside INT64 ns is refused. The server reads a time without a zone, and
// today/yesterday, in UTC; the page reads them in the browser's local time
// (zone 'local') and sends the server what it means (apiTime).
// tests/unit/data/times.tsv holds the rows both sides must agree on (in UTC).

const S = 1000000000n;
const DAY = 86400n * S;
const UNIT_NS = { ns: 1n, us: 1000n, ms: 1000000n, s: S, m: 60n * S, h: 3600n * S, d: 86400n * S,
  w: 604800n * S };
const MAX = (1n << 63n) - 1n;
const MIN = -(1n << 63n);
const inRange = (t) => (t === null || t < MIN || t > MAX ? null : t);

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

// Days from 1970-01-01 to y-m-d (proleptic Gregorian), for UTC without Date's
// limits: the civil-from-days count in 400-year eras, as timespec.c does.
function daysFromCivil(y, m, d) {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  return era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
}

const daysIn = (y, m) => (m === 2 && ((y % 4 === 0 && y % 100 !== 0) || y % 400 === 0)
  ? 29 : [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]);

/** The browser's local wall-clock time as unix ms (a DST gap moves it as Date does). */
function localMs(y, mo, d, h = 0, mi = 0, sec = 0) {
  const t = new Date(2000, 0, 1);
  t.setFullYear(y, mo - 1, d);
  t.setHours(h, mi, sec, 0);
  return t.getTime();
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/** An ISO-8601 date or time -> ns, null when not one; no zone: UTC or local. */
function isoNs(s, zone) {
  const m = ISO.exec(s);
  if (!m) return null;
  const [y, mo, d, h, mi, sec] = [1, 2, 3, 4, 5, 6].map((k) => Number(m[k] || 0));
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 59) return null;
  const frac = m[7] ? BigInt(m[7].slice(1).padEnd(9, '0')) : 0n;
  let east = 0;
  if (m[8] && m[8] !== 'Z') {
    const [, , zh, zm] = /^([+-])(\d{2}):?(\d{2})?$/.exec(m[8]).map(Number);
    if (zh > 23 || zm > 59) return null;
    east = (m[8][0] === '-' ? -1 : 1) * (zh * 3600 + (zm || 0) * 60);
  }
  if (!m[8] && zone === 'local') {
    return inRange(BigInt(localMs(y, mo, d, h, mi, sec)) * 1000000n + frac);
  }
  const secs = daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - east;
  return inRange(BigInt(secs) * S + frac);
}

/** "now", "today" or "yesterday" at nowNs -> ns (UTC or local midnights). */
function anchorNs(name, nowNs, zone) {
  if (name === 'now') return nowNs;
  const back = name === 'yesterday' ? 1 : 0;
  if (zone === 'local') {
    const t = new Date(Number(nowNs / 1000000n));
    if (Number.isNaN(t.getTime())) return null;
    return BigInt(localMs(t.getFullYear(), t.getMonth() + 1, t.getDate() - back)) * 1000000n;
  }
  let day = nowNs / DAY;
  if (nowNs % DAY < 0n) day -= 1n; // floor
  return inRange((day - BigInt(back)) * DAY);
}

/**
 * A time expression -> unix nanoseconds (BigInt), or null when refused. zone
 * 'utc' (default) reads it as the server does; 'local' as the page means it.
 */
export function parseTimeNs(expr, nowNs, zone = 'utc') {
  const s = String(expr ?? '');
  const rel = /^(now|today|yesterday)(?:([+-])(.*))?$/.exec(s);
  if (rel) {
    const at = anchorNs(rel[1], nowNs, zone);
    if (at === null || !rel[2]) return at;
    const d = termsNs(rel[3]);
    if (d === null) return null;
    return inRange(rel[2] === '-' ? at - d : at + d);
  }
  if (!/^\d+$/.test(s)) return isoNs(s, zone);
  if (s.length > 19) return null;
  const v = BigInt(s);
  const mul = v < 100000000000n ? S : v < 100000000000000n ? 1000000n
    : v < 100000000000000000n ? 1000n : 1n;
  return inRange(v * mul);
}

/** The current time as ns (BigInt), from Date.now() or a given ms. */
const nowNsOf = (ms = Date.now()) => BigInt(Math.round(ms)) * 1000000n;

/** ns (BigInt) -> "2026-11-27T09:00:00.5Z": an instant any reader takes the same way. */
export function isoUTC(ns) {
  let secs = ns / S;
  let frac = ns % S;
  if (frac < 0n) {
    secs -= 1n;
    frac += S;
  }
  const base = new Date(Number(secs) * 1000).toISOString().slice(0, 19);
  return `${base}${frac ? `.${String(frac).padStart(9, '0').replace(/0+$/, '')}` : ''}Z`;
}

/** unix ms -> "2026-11-27 10:00:05" in local time: what the boxes show, and read back. */
export function localDate(ms) {
  const d = new Date(ms);
  const p = (v) => String(v).padStart(2, '0');
  return `${String(d.getFullYear()).padStart(4, '0')}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// Read the same by the page and the server wherever they are: relative to now,
// a unix number, an ISO time that names its zone.
const SAME_EVERYWHERE = /^(now([+-]|$)|\d+$|.*(Z|[+-]\d{2}(:?\d{2})?)$)/;

/**
 * What the page sends the API for a time the user wrote: as written when the
 * server reads it as the page does; else (today, yesterday, a time without a
 * zone) the instant the page means, as ISO UTC. Unreadable: as written, so the
 * server's 400 names it.
 */
export function apiTime(expr, nowMs = Date.now()) {
  const s = String(expr ?? '').trim();
  if (!s || SAME_EVERYWHERE.test(s) && !/^(today|yesterday)/.test(s)) return s;
  const ns = parseTimeNs(s, nowNsOf(nowMs), 'local');
  return ns === null ? s : isoUTC(ns);
}

/**
 * What the URL keeps for a time the user wrote: a fixed instant as unix seconds
 * (or ISO UTC when not whole seconds since 1970), so the link means the same
 * instant in any zone; relative times as written. null when unreadable.
 */
export function keepTime(expr, nowMs = Date.now()) {
  const s = String(expr ?? '').trim();
  const ns = parseTimeNs(s, nowNsOf(nowMs), 'local');
  if (ns === null) return null;
  if (/^(now|today|yesterday)/.test(s)) return s;
  return ns >= 0n && ns % S === 0n ? String(ns / S) : isoUTC(ns);
}

/** What a box shows for a kept time: unix numbers as local dates, the rest as written. */
export function showTime(expr) {
  const s = String(expr ?? '');
  if (!/^\d+$/.test(s)) return s;
  const ns = parseTimeNs(s, 0n);
  return ns === null ? s : localDate(Number(ns / 1000000n));
}

/** "1h30m" -> 5400 (seconds), NaN when not a duration the server reads after "now-". */
export function durationSec(s) {
  const ns = termsNs(s);
  return ns === null ? NaN : Number(ns / 1000000n) / 1000;
}

/** A time expression as the page means it (local zone) -> unix seconds (to the ms), NaN when unreadable. */
export function toSec(expr, nowSec) {
  const ns = parseTimeNs(String(expr ?? '').trim(), nowNsOf(nowSec * 1000), 'local');
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
