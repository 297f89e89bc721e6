// Number, percentage and time formatting shared by every view.

const intFmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** 12345 -> "12,345" (samples are counts; fractional values are rounded). */
export function fmtInt(n) {
  return intFmt.format(Math.round(n));
}

// The unit of the values shown: the server's "unit" for the current profile type
// (samples for CPU, bytes, count, nanoseconds) and the type's sample type name,
// so that a memory profile reads "64.0 MiB", not "67,108,864 samples".
let curUnit = 'samples';
let curName = '';

/** Sets the unit of the values on show (the answer's "unit") and the type ID. */
export function setUnit(unit, typeId) {
  curUnit = unit || 'samples';
  curName = (typeId || '').split(':')[1] || '';
}

/*
 * Profile types whose values are time per thread, split by why it waited
 * (docs/offcpu.md): their picker names, and the label naming the reason.
 */
export const TIME_TYPES = {
  'off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds': 'off-CPU time',
  'wall:wall:nanoseconds:wall:nanoseconds': 'wall-clock time',
};
export const REASON_LABEL = 'reason';
/** Whether a type ID's values come with a reason (off-CPU, wall-clock). */
export const hasReasons = (typeId) => Object.hasOwn(TIME_TYPES, typeId || '');

/**
 * The type picker's name of a type ID: "off-CPU time (ms, s)", "memory:
 * inuse_space (bytes)"; a type counting nanoseconds says "time" rather than
 * its raw unit.
 */
export function typeLabel(t) {
  if (hasReasons(t)) return `${TIME_TYPES[t]} (ms, s)`;
  const f = t.split(':');
  if (f.length !== 5) return t;
  return `${f[0]}: ${f[1]} (${f[2] === 'nanoseconds' ? 'time' : f[2]})`;
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** 1536 -> "1.5 KiB" */
export function fmtBytes(n) {
  let v = Math.abs(n);
  let i = 0;
  while (v >= 1024 && i < BYTE_UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return `${n < 0 ? '-' : ''}${i ? v.toFixed(1) : Math.round(v)} ${BYTE_UNITS[i]}`;
}

/** 1.5e9 -> "1.50 s" */
export function fmtNanos(n) {
  const a = Math.abs(n);
  if (a >= 1e9) return `${(n / 1e9).toFixed(2)} s`;
  if (a >= 1e6) return `${(n / 1e6).toFixed(2)} ms`;
  if (a >= 1e3) return `${(n / 1e3).toFixed(2)} µs`;
  return `${Math.round(n)} ns`;
}

/** A value in the current unit, bare: "12,345" (samples, counts), "1.5 MiB", "2.00 ms". */
export function fmtValue(n) {
  if (curUnit === 'bytes') return fmtBytes(n);
  if (curUnit === 'nanoseconds') return fmtNanos(n);
  return fmtInt(n);
}

/** A value with what it counts: "12,345 samples", "1.5 MiB", "20 goroutine". */
export function fmtAmount(n) {
  if (curUnit === 'samples') return `${fmtInt(n)} samples`;
  if (curUnit === 'count') return `${fmtInt(n)} ${curName || 'count'}`;
  return fmtValue(n);
}

/** part/whole as "42.0%" ("0%" when whole is 0). */
export function fmtPct(part, whole) {
  if (!whole) return '0%';
  const p = (100 * part) / whole;
  return (p >= 10 || p === 0 ? p.toFixed(1) : p.toFixed(2)) + '%';
}

/** signed percentage points: +1.25 pp / -0.40 pp */
export function fmtPP(pp) {
  const s = pp > 0 ? '+' : pp < 0 ? '−' : '±';
  return s + Math.abs(pp).toFixed(2) + ' pp';
}

/** unix seconds -> "2026-11-21 01:23:45" in local time */
export function fmtTime(sec) {
  const d = new Date(sec * 1000);
  const p = (v) => String(v).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** HTML-escapes text for attribute and element content. */
export function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) =>
    ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}
