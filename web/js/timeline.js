// The timeline: samples per step for the selection, stacked by group, with a drag
// brush that picks a sub-range. Series are drawn as stacked bars, one per step.

import { fmtAmount, fmtTime, fmtValue, esc } from './format.js';

const COLORS = ['#e8590c', '#1c7ed6', '#2f9e44', '#ae3ec9', '#f59f00', '#0c8599', '#e03131',
  '#5c7cfa', '#66a80f', '#d6336c'];
const OTHER = '#adb5bd';
const AXIS_H = 20;
const MAX_GROUPS = COLORS.length; // the rest are summed as "other"

export class Timeline {
  /**
   * el: #timeline; legend: legend element; onBrush(fromSec, untilSec, mouseup event:
   * its shiftKey picks the diff's After side); tip: #tooltip. brushColor: the drag's
   * colour while it picks a diff side ('' = the zoom's orange).
   */
  constructor(el, legend, onBrush, tip) {
    this.el = el;
    this.legend = legend;
    this.onBrush = onBrush;
    this.tip = tip;
    this.canvas = document.createElement('canvas');
    this.canvas.setAttribute('aria-label', 'Samples over time; drag to select a time range');
    el.appendChild(this.canvas);
    this.data = null;
    this.drag = null;
    this.marks = [];
    this.brushColor = '';
    this.canvas.addEventListener('mousedown', (e) => this.down(e));
    window.addEventListener('mousemove', (e) => this.move(e));
    this.canvas.addEventListener('mousemove', (e) => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => {
      if (this.tip) this.tip.hidden = true;
    });
    window.addEventListener('mouseup', (e) => this.up(e));
  }

  /** data: the /api/timeline answer (from/until/step in ms), or null and why. */
  setData(data, why = '') {
    this.data = data;
    this.why = why;
    if (data) {
      this.el.dataset.from = String(Math.floor(data.from / 1000));
      this.el.dataset.until = String(Math.ceil(data.until / 1000));
    }
    this.series = data ? stackable(data.groups || []) : [];
    this.legend.innerHTML = this.series.length > 1 || (this.series[0] && this.series[0].group)
      ? this.series.map((s) => `<span style="--c:${s.color}" data-group="${esc(s.group || '')}" data-total="${s.sum}">` +
        `${esc(s.group || '(no value)')}</span>`).join('')
      : '';
    this.draw();
  }

  /** Shaded ranges under the bars: [{from, until (unix s), color, label}] (the diff's sides). */
  setMarks(marks) {
    this.marks = marks;
    this.el.dataset.marks = JSON.stringify(marks); // for scripts: what is shaded
    this.draw();
  }

  // Shades first (under the bars), labels after the bars (on top, with a halo).
  drawMarks(ctx, W, plotH, labels) {
    const d = this.data;
    const span = d.until - d.from;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    for (const m of this.marks) {
      const x0 = Math.max(0, ((m.from * 1000 - d.from) / span) * W);
      const x1 = Math.min(W, ((m.until * 1000 - d.from) / span) * W);
      if (!(x1 > x0)) continue;
      ctx.fillStyle = m.color;
      if (labels) {
        if (x1 - x0 <= 40) continue;
        ctx.lineWidth = 3;
        ctx.strokeStyle = 'rgba(255, 255, 255, 0.9)';
        ctx.strokeText(m.label, x0 + 4, 3);
        ctx.fillText(m.label, x0 + 4, 3);
        continue;
      }
      ctx.globalAlpha = 0.13;
      ctx.fillRect(x0, 0, x1 - x0, plotH);
      ctx.globalAlpha = 1;
      ctx.fillRect(x0, plotH - 2, x1 - x0, 2);
    }
  }

  draw() {
    const W = Math.max(100, this.el.clientWidth);
    const H = this.el.clientHeight || 120;
    const dpr = window.devicePixelRatio || 1;
    const c = this.canvas;
    c.width = Math.round(W * dpr);
    c.height = Math.round(H * dpr);
    c.style.width = W + 'px';
    c.style.height = H + 'px';
    const ctx = c.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    this.W = W;
    const d = this.data;
    const plotH = H - AXIS_H;
    ctx.strokeStyle = '#e2e5ea';
    ctx.beginPath();
    ctx.moveTo(0, plotH + 0.5);
    ctx.lineTo(W, plotH + 0.5);
    ctx.stroke();
    if (d) this.drawAxis(ctx, W, plotH);
    if (d && this.marks.length) this.drawMarks(ctx, W, plotH, false);
    if (!d || !this.series.length || !this.series.some((g) => g.sum > 0)) {
      ctx.fillStyle = '#98a2b3';
      ctx.font = '13px system-ui, sans-serif';
      ctx.textAlign = 'center';
      ctx.textBaseline = 'middle';
      ctx.fillText(d ? 'No samples in this time range' : `No timeline${this.why ? `: ${this.why}` : ''}`,
        W / 2, plotH / 2);
      ctx.textAlign = 'start';
      return;
    }
    const n = this.series[0].values.length;
    const sums = new Float64Array(n);
    for (const s of this.series) for (let k = 0; k < n; k++) sums[k] += s.values[k] || 0;
    let max = 0;
    for (let k = 0; k < n; k++) max = Math.max(max, sums[k]);
    this.max = max;
    const bw = W / Math.max(1, n);
    if (max > 0) {
      const base = new Float64Array(n);
      for (const s of this.series) {
        ctx.fillStyle = s.color;
        for (let k = 0; k < n; k++) {
          const v = s.values[k] || 0;
          if (!v) continue;
          const h = (v / max) * (plotH - 14);
          const y = plotH - base[k] - h;
          ctx.fillRect(k * bw + (bw > 4 ? 0.5 : 0), y, Math.max(1, bw > 4 ? bw - 1 : bw), h);
          base[k] += h;
        }
      }
      ctx.fillStyle = '#667085';
      ctx.font = '11px system-ui, sans-serif';
      ctx.textBaseline = 'top';
      ctx.fillText(`${fmtAmount(max)} / ${fmtStep(d.step)}`, 4, 0);
    }
    if (this.marks.length) this.drawMarks(ctx, W, plotH, true);
    if (this.drag) {
      const x0 = Math.min(this.drag.x0, this.drag.x1);
      const x1 = Math.max(this.drag.x0, this.drag.x1);
      const c = this.brushColor || '#e8590c';
      ctx.fillStyle = c;
      ctx.globalAlpha = 0.15;
      ctx.fillRect(x0, 0, x1 - x0, plotH);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = c;
      ctx.strokeRect(x0 + 0.5, 0.5, x1 - x0, plotH - 1);
    }
  }

  drawAxis(ctx, W, plotH) {
    const d = this.data;
    const span = d.until - d.from;
    ctx.fillStyle = '#667085';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    const ticks = Math.max(2, Math.floor(W / 140));
    for (let k = 0; k <= ticks; k++) {
      const ms = d.from + (span * k) / ticks;
      // Date and minutes over a day, seconds under half an hour.
      const label = fmtTime(ms / 1000).slice(span > 36e5 * 20 ? 5 : 11, span <= 18e5 ? 19 : 16);
      const tw = ctx.measureText(label).width;
      const x = Math.min(W - tw, Math.max(0, (W * k) / ticks - tw / 2));
      ctx.fillText(label, x, plotH + 5);
    }
  }

  /** Tooltip with the step under the mouse: its time and samples per group. */
  hover(e) {
    const d = this.data;
    if (!this.tip || !d || this.drag || !this.series.length) return;
    const n = this.series[0].values.length;
    const k = Math.floor((this.xOf(e) / this.W) * n);
    if (k < 0 || k >= n) return;
    const t0 = (d.from + k * d.step) / 1000;
    let sum = 0;
    const rows = this.series.filter((g) => g.values[k]).map((g) => {
      sum += g.values[k];
      return `<tr><td><span class="swatch" style="background:${g.color}"></span>${esc(g.group || 'samples')}</td>` +
        `<td class="num">${fmtValue(g.values[k])}</td></tr>`;
    });
    this.tip.innerHTML = `<div class="tname">${fmtTime(t0)} + ${fmtStep(d.step)}</div>` +
      `<table>${rows.join('')}${rows.length > 1 ? `<tr><td>all</td><td class="num">${fmtValue(sum)}</td></tr>` : ''}` +
      `${rows.length ? '' : '<tr><td>no samples</td></tr>'}</table>`;
    this.tip.hidden = false;
    const left = Math.min(e.clientX + 14, window.innerWidth - this.tip.offsetWidth - 4);
    this.tip.style.left = Math.max(4, left) + 'px';
    this.tip.style.top = e.clientY + 14 + 'px';
  }

  xOf(e) {
    const r = this.canvas.getBoundingClientRect();
    return Math.max(0, Math.min(r.width, e.clientX - r.left));
  }

  down(e) {
    if (!this.data || e.button !== 0) return;
    e.preventDefault();
    if (this.tip) this.tip.hidden = true;
    const x = this.xOf(e);
    this.drag = { x0: x, x1: x };
  }

  move(e) {
    if (!this.drag) return;
    this.drag.x1 = this.xOf(e);
    this.draw();
  }

  up(e) {
    if (!this.drag) return;
    this.drag.x1 = this.xOf(e);
    const x0 = Math.min(this.drag.x0, this.drag.x1);
    const x1 = Math.max(this.drag.x0, this.drag.x1);
    this.drag = null;
    this.draw();
    if (x1 - x0 < 3) return; // a click, not a drag
    const d = this.data;
    const toSec = (x) => (d.from + ((d.until - d.from) * x) / this.W) / 1000;
    const from = Math.floor(toSec(x0));
    const until = Math.max(from + 1, Math.ceil(toSec(x1)));
    this.onBrush(from, until, e);
  }
}

function fmtStep(ms) {
  if (ms % 3600000 === 0) return `${ms / 3600000}h`;
  if (ms % 60000 === 0) return `${ms / 60000}m`;
  return `${ms / 1000}s`;
}

// Largest groups keep their own colour; the rest are summed into "other".
function stackable(groups) {
  const withSum = groups.map((g) => ({
    group: g.group, values: g.values || [], sum: (g.values || []).reduce((a, b) => a + b, 0),
  }));
  withSum.sort((a, b) => b.sum - a.sum);
  const out = withSum.slice(0, MAX_GROUPS).map((g, k) => ({ ...g, color: COLORS[k] }));
  if (withSum.length > MAX_GROUPS) {
    const rest = withSum.slice(MAX_GROUPS);
    const values = rest[0].values.map((_, k) => rest.reduce((a, g) => a + (g.values[k] || 0), 0));
    out.push({ group: `other (${rest.length})`, values, sum: rest.reduce((a, g) => a + g.sum, 0), color: OTHER });
  }
  return out;
}
