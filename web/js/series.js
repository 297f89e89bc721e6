// One function's line over the range beside the selection's total: the
// /api/function-series answer drawn as an SVG (two polylines on one axis), so
// its points are in the DOM for screen readers and tests (data-* on the svg).
// Hovering shows the step under the mouse in the shared tooltip.

import { esc, fmtAmount, fmtTime } from './format.js';
import { fmtLevel, linePoints, normUnit } from './signif.js';

const H = 110; // plot height, CSS px
const AXIS_H = 18;

export class SeriesChart {
  /** el: the element the svg goes in; tip: #tooltip. */
  constructor(el, tip) {
    this.el = el;
    this.tip = tip;
    this.data = null;
    el.addEventListener('mousemove', (e) => this.hover(e));
    el.addEventListener('mouseleave', () => {
      if (this.tip) this.tip.hidden = true;
    });
  }

  /** data: the /api/function-series answer, or null to clear. */
  setData(data) {
    this.data = data;
    this.draw();
  }

  /** A value in the answer's normalisation, with its unit. */
  fmt(v) {
    const d = this.data;
    if (d.normalize === 'share') return `${(+v || 0).toFixed(2)}%`;
    if (d.normalize === 'rate') return fmtLevel(+v || 0, normUnit(d.unit, 'rate'));
    return fmtAmount(+v || 0);
  }

  draw() {
    const d = this.data;
    if (!d) {
      this.el.innerHTML = '';
      return;
    }
    const W = Math.max(200, Math.floor(this.el.clientWidth || 600));
    this.W = W;
    const values = (d.values || []).map((v) => +v || 0);
    const totals = (d.totals || []).map((v) => +v || 0);
    const max = Math.max(0, ...values, ...totals);
    const sum = (a) => a.reduce((x, y) => x + y, 0);
    const times = d.times || [];
    const t0 = times.length ? times[0] / 1e9 : d.from / 1e9;
    const t1 = times.length ? times[times.length - 1] / 1e9 : d.until / 1e9;
    const label = (s) => fmtTime(s).slice(t1 - t0 > 72000 ? 5 : 11, t1 - t0 <= 1800 ? 19 : 16);
    this.el.innerHTML =
      `<svg width="${W}" height="${H + AXIS_H}" data-function="${esc(d.function)}" data-kind="${esc(d.kind)}"` +
      ` data-normalize="${esc(d.normalize)}" data-points="${values.length}" data-sum="${sum(values)}"` +
      ` data-total-sum="${sum(totals)}" role="img" aria-label="${esc(`${d.function} (${d.kind}) over time, beside the total`)}">` +
      `<line class="axis" x1="0" y1="${H + 0.5}" x2="${W}" y2="${H + 0.5}"/>` +
      `<polyline class="total" points="${linePoints(totals, W, H - 14, max)}" transform="translate(0 14)"/>` +
      `<polyline class="fn" points="${linePoints(values, W, H - 14, max)}" transform="translate(0 14)"/>` +
      `<text class="max" x="4" y="10">${esc(this.fmt(max))}</text>` +
      `<text x="0" y="${H + 14}">${esc(label(t0))}</text>` +
      `<text x="${W}" y="${H + 14}" text-anchor="end">${esc(label(t1))}</text></svg>`;
  }

  hover(e) {
    const d = this.data;
    const n = d && d.values ? d.values.length : 0;
    if (!this.tip || !n) return;
    const r = this.el.getBoundingClientRect();
    const k = Math.max(0, Math.min(n - 1, Math.round(((e.clientX - r.left) / this.W) * (n - 1))));
    const t = d.times && d.times[k] !== undefined ? fmtTime(d.times[k] / 1e9) : '';
    this.tip.innerHTML = `<div class="tname">${esc(t)}</div><table>` +
      `<tr><td><span class="swatch fn"></span>${esc(d.function)} (${esc(d.kind)})</td><td class="num">${esc(this.fmt(d.values[k]))}</td></tr>` +
      `<tr><td><span class="swatch total"></span>total</td><td class="num">${esc(this.fmt((d.totals || [])[k]))}</td></tr></table>`;
    this.tip.hidden = false;
    const left = Math.min(e.clientX + 14, window.innerWidth - this.tip.offsetWidth - 4);
    this.tip.style.left = Math.max(4, left) + 'px';
    this.tip.style.top = e.clientY + 14 + 'px';
  }
}
