// Number, percentage and time formatting shared by every view.

const intFmt = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** 12345 -> "12,345" (samples are counts; fractional values are rounded). */
export function fmtInt(n) {
  return intFmt.format(Math.round(n));
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
