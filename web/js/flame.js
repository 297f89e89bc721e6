// The flame graph on a canvas. Costs scale with what is visible, not with the tree:
// a frame narrower than MIN_W skips its whole subtree (children are never wider
// than their parent), rectangles are filled in one batch per colour, and text is
// drawn only where it fits. The only per-frame DOM is the accessibility list
// (ul.flame-frames), capped at the LIST_CAP widest frames.
// The container is a box of bounded height (style.css: .flame) that scrolls a deep
// graph inside it; in the flame orientation it is kept scrolled to the bottom, where
// the roots are, so the page stays short and the roots in sight.
// Colours of the canvas's background and text come from the page's CSS variables
// (--flame-bg, --flame-text, --flame-dim-text), so the graph follows the theme.

import { bareName } from './colors.js';
import { esc } from './format.js';

const ROW_H = 18; // CSS pixels per stack level (1 px of it is the gap)
const MIN_W = 0.5; // narrower frames (CSS px) are not drawn
const LIST_MIN_W = 1; // narrower frames are not listed
const LIST_CAP = 5000;
const MAX_H = 16000; // canvases taller than this are clipped (browsers cap them)
const FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

export class FlameGraph {
  /**
   * container: element that receives the canvas; list: the ul for frames;
   * opts: {palette, dimIndex, colors(t) -> Uint8Array, onSelect(i) after a click zoomed,
   *        focusOnClick (a clicked frame's name becomes the highlighted one),
   *        tooltip(t, i) -> html, tooltipEl, orient: 'icicle'|'flame', change(i) for diffs,
   *        verdict(i) -> 'up'|'down'|'noise'|'' for diffs judged for noise,
   *        onContext(i): a right-click on frame i (the menu is then not shown)}
   */
  constructor(container, list, opts) {
    this.container = container;
    this.list = list;
    this.opts = opts;
    this.orient = opts.orient || 'icicle';
    this.canvas = document.createElement('canvas');
    this.canvas.setAttribute('aria-hidden', 'true');
    // Hidden until first drawn: an opaque canvas starts out black (the page's loading
    // indicator, style.css .loading, shows meanwhile).
    this.canvas.hidden = true;
    container.appendChild(this.canvas);
    // Outline of the frame under the mouse: a div, so hovering never redraws the canvas.
    this.hoverBox = document.createElement('div');
    this.hoverBox.className = 'hover-box';
    this.hoverBox.hidden = true;
    container.appendChild(this.hoverBox);
    this.ctx = this.canvas.getContext('2d', { alpha: false });
    this.t = null;
    this.zoom = 0;
    this.match = null; // Uint8Array by name id, or null when no search
    this.focus = -1; // highlighted name id
    this.hatch = null;
    this.charW = 0;
    this.drawn = 0;
    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mouseleave', () => this.hideTip());
    this.canvas.addEventListener('click', (e) => this.onClick(e));
    this.canvas.addEventListener('contextmenu', (e) => this.onContext(e));
    // The container's width, kept by an observer so drawing never forces a layout;
    // a visible graph is redrawn when its width changes.
    this.width = 0;
    new ResizeObserver((entries) => {
      const w = entries[entries.length - 1].contentRect.width;
      const redraw = w > 0 && Math.floor(w) !== Math.floor(this.width) && this.t && this.drawn;
      this.width = w;
      if (redraw) requestAnimationFrame(() => this.render());
    }).observe(container);
  }

  /** Shows a new tree, unzoomed. */
  setTree(t) {
    this.t = t;
    this.zoom = 0;
    this.colors = t ? this.opts.colors(t) : null;
    const cap = t ? t.n : 0;
    this.nameW = new Float32Array(t ? t.names.length : 0); // label widths, 0 = not measured
    this.dIdx = new Int32Array(cap);
    this.dX = new Float32Array(cap);
    this.dW = new Float32Array(cap);
  }

  /** Sets the search matches (Uint8Array by name id) or null. */
  setMatch(byName) {
    this.match = byName;
  }

  /** Highlights every frame of one function: its name id in t (tree.js fnId), -1 for none. */
  setFocus(nameIdx) {
    this.focus = nameIdx;
  }

  /** Whether node i is a frame of the focused function (its inlined frames included: tree.js t.fn). */
  focused(i) {
    const t = this.t;
    return this.focus >= 0 && (t.fn ? t.fn[t.nameIdx[i]] : t.nameIdx[i]) === this.focus;
  }

  setOrient(o) {
    if (o !== this.orient && o !== 'flame') this.container.scrollTop = 0; // roots on top again
    this.orient = o;
  }

  /** The chain from the root to node i, root first. */
  path(i) {
    const out = [];
    for (let p = i; p >= 0; p = this.t.parent[p]) out.push(p);
    return out.reverse();
  }

  rowY(depth) {
    return this.orient === 'flame' ? (this.visDepth - depth) * ROW_H : depth * ROW_H;
  }

  /** Draws the canvas and rebuilds the frame list. */
  render() {
    this.drawCanvas();
    this.renderList();
  }

  /** Sizes the canvas for the current width and device pixel ratio, then draws. */
  drawCanvas() {
    const t = this.t;
    if (!this.width) this.width = this.container.clientWidth;
    const cssW = Math.max(100, Math.floor(this.width));
    this.drawn = 0;
    this.visDepth = 0;
    const ok = t && t.n > 0 && t.size[0] > 0;
    if (ok) this.layout(cssW);
    // As tall as the deepest visible frame: deeper levels are all under MIN_W.
    const cssH = Math.min(MAX_H, (this.visDepth + 1) * ROW_H);
    const dpr = window.devicePixelRatio || 1;
    const c = this.canvas;
    if (c.width !== Math.round(cssW * dpr) || c.height !== Math.round(cssH * dpr)) {
      c.width = Math.round(cssW * dpr);
      c.height = Math.round(cssH * dpr);
      c.style.width = cssW + 'px';
      c.style.height = cssH + 'px';
    }
    this.hoverBox.hidden = true;
    c.hidden = false;
    const css = getComputedStyle(this.container);
    const v = (k, d) => css.getPropertyValue(k).trim() || d;
    this.theme = { bg: v('--flame-bg', '#ffffff'), text: v('--flame-text', '#1b2330'),
      dimText: v('--flame-dim-text', '#8a93a3') };
    const ctx = this.ctx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = this.theme.bg;
    ctx.fillRect(0, 0, cssW, cssH);
    this.cssW = cssW;
    // Roots at the bottom: show them (the box scrolls a graph taller than itself).
    if (this.orient === 'flame') this.container.scrollTop = this.container.scrollHeight;
    if (!ok) return;
    this.fillFrames(ctx);
    this.drawText(ctx);
  }

  // Collects visible frames into dIdx/dX/dW: the zoomed frame's ancestors span the
  // full width, its subtree is scaled to the width, and narrow subtrees are skipped.
  layout(W) {
    const t = this.t;
    const z = this.zoom;
    let k = 0;
    for (let p = t.parent[z]; p >= 0; p = t.parent[p]) {
      this.dIdx[k] = p;
      this.dX[k] = 0;
      this.dW[k++] = W;
    }
    const x0 = t.start[z];
    const scale = W / t.size[z];
    const end = t.end[z];
    let i = z;
    while (i < end) {
      const w = t.size[i] * scale;
      if (w < MIN_W) {
        i = t.end[i];
        continue;
      }
      this.dIdx[k] = i;
      this.dX[k] = (t.start[i] - x0) * scale;
      this.dW[k++] = w;
      if (t.depth[i] > this.visDepth) this.visDepth = t.depth[i];
      i++;
    }
    this.drawn = k;
  }

  colorOf(i) {
    const t = this.t;
    if (this.match && i > 0 && !this.match[t.nameIdx[i]]) return this.opts.dimIndex;
    return this.colors[i];
  }

  fillFrames(ctx) {
    const t = this.t;
    const pal = this.opts.palette;
    const k = this.drawn;
    // Counting sort of the visible frames by colour, then one fillStyle per colour.
    const count = new Int32Array(pal.length + 1);
    const col = new Uint8Array(k);
    for (let j = 0; j < k; j++) {
      col[j] = this.colorOf(this.dIdx[j]);
      count[col[j] + 1]++;
    }
    for (let c = 0; c < pal.length; c++) count[c + 1] += count[c];
    const order = new Int32Array(k);
    const pos = count.slice(0, pal.length);
    for (let j = 0; j < k; j++) order[pos[col[j]]++] = j;
    for (let c = 0; c < pal.length; c++) {
      if (count[c + 1] === count[c]) continue;
      ctx.fillStyle = pal[c];
      for (let o = count[c]; o < count[c + 1]; o++) this.rect(ctx, order[o], 'fill');
    }
    // Inlined frames: a hatch over their colour (and italic text below).
    ctx.fillStyle = this.hatchPattern(ctx);
    for (let j = 0; j < k; j++) if (t.inlined[this.dIdx[j]]) this.rect(ctx, j, 'fill');
    // The focused function: a dark outline on every frame of that function.
    if (this.focus >= 0) {
      ctx.strokeStyle = '#111827';
      ctx.lineWidth = 2;
      for (let j = 0; j < k; j++) {
        if (this.focused(this.dIdx[j]) && this.dW[j] >= 4) this.rect(ctx, j, 'stroke');
      }
    }
  }

  rect(ctx, j, how) {
    const i = this.dIdx[j];
    const w = this.dW[j];
    const x = this.dX[j];
    const y = this.rowY(this.t.depth[i]);
    const ww = w > 2 ? w - 1 : w;
    if (how === 'fill') ctx.fillRect(x, y, ww, ROW_H - 1);
    else ctx.strokeRect(x + 1, y + 1, Math.max(ww - 2, 0.5), ROW_H - 3);
  }

  hatchPattern(ctx) {
    if (this.hatch) return this.hatch;
    const p = document.createElement('canvas');
    p.width = p.height = 6;
    const g = p.getContext('2d');
    g.strokeStyle = 'rgba(255,255,255,0.55)';
    g.lineWidth = 1.5;
    g.beginPath();
    g.moveTo(-1, 7);
    g.lineTo(7, -1);
    g.stroke();
    this.hatch = ctx.createPattern(p, 'repeat');
    return this.hatch;
  }

  drawText(ctx) {
    const t = this.t;
    ctx.font = FONT;
    if (!this.charW) this.charW = ctx.measureText('abcdefghijklmnopqrstuvwxyz_ABCDEF').width / 32;
    ctx.textBaseline = 'middle';
    let italic = false;
    for (let j = 0; j < this.drawn; j++) {
      const w = this.dW[j];
      if (w < 24) continue;
      const i = this.dIdx[j];
      const room = w - 8;
      if (room < 2 * this.charW) continue;
      const id = t.nameIdx[i];
      let s = bareName(t.names[id]);
      if (!!t.inlined[i] !== italic) {
        italic = !!t.inlined[i];
        ctx.font = (italic ? 'italic ' : '') + FONT;
      }
      // Short labels fit by the average character width; longer ones are measured
      // once per name (cached for the tree) and cut in proportion, with a margin.
      if (s.length * this.charW > room * 0.75) {
        if (!this.nameW[id]) this.nameW[id] = ctx.measureText(s).width;
        const full = this.nameW[id];
        if (full > room) {
          const keep = Math.floor((s.length * room) / full) - 2;
          if (keep < 1) continue;
          s = s.slice(0, keep) + '…';
        }
      }
      const dim = this.match && i > 0 && !this.match[t.nameIdx[i]];
      ctx.fillStyle = dim ? this.theme.dimText : this.theme.text;
      ctx.fillText(s, this.dX[j] + 4, this.rowY(t.depth[i]) + (ROW_H - 1) / 2 + 0.5);
    }
    if (italic) ctx.font = FONT;
  }

  /** Rebuilds the accessibility list: the LIST_CAP widest frames of at least 1 px. */
  renderList() {
    const t = this.t;
    if (!this.list) return;
    if (!t) {
      this.list.innerHTML = '';
      return;
    }
    let idx = [];
    for (let j = 0; j < this.drawn; j++) if (this.dW[j] >= LIST_MIN_W) idx.push(j);
    if (idx.length > LIST_CAP) {
      idx.sort((a, b) => this.dW[b] - this.dW[a]);
      idx = idx.slice(0, LIST_CAP).sort((a, b) => a - b);
    }
    const diff = t.diff;
    const parts = new Array(idx.length);
    for (let n = 0; n < idx.length; n++) {
      const j = idx[n];
      const i = this.dIdx[j];
      const name = esc(t.names[t.nameIdx[i]]);
      let a = `<li data-name="${name}" data-self="${t.self[i]}" data-total="${t.total[i]}"` +
        ` data-depth="${t.depth[i]}" data-x="${this.dX[j].toFixed(1)}"` +
        ` data-y="${this.rowY(t.depth[i])}" data-w="${this.dW[j].toFixed(1)}"` +
        ` data-h="${ROW_H - 1}"`;
      if (t.inlined[i]) a += ' data-inlined="1"';
      if (this.match && i > 0 && this.match[t.nameIdx[i]]) a += ' data-match="1"';
      if (this.focused(i)) a += ' data-highlight="1"';
      if (!diff) a += ` data-fill="${this.opts.palette[this.colors[i]]}"`;
      if (diff) {
        a += ` data-left="${t.ltotal[i]}" data-right="${t.rtotal[i]}"` +
          ` data-change="${this.opts.change(i).toFixed(2)}" data-fill="${this.opts.palette[this.colors[i]]}"`;
        const v = this.opts.verdict ? this.opts.verdict(i) : '';
        if (v) a += ` data-verdict="${v}"`;
      }
      parts[n] = a + `>${name}</li>`;
    }
    this.list.innerHTML = parts.join('');
  }

  /** The visible frame under CSS pixel (x, y) of the canvas, or -1. */
  hit(x, y) {
    const t = this.t;
    if (!t) return -1;
    for (let j = 0; j < this.drawn; j++) {
      const i = this.dIdx[j];
      const top = this.rowY(t.depth[i]);
      if (y >= top && y < top + ROW_H && x >= this.dX[j] && x < this.dX[j] + this.dW[j]) return i;
    }
    return -1;
  }

  /** Zooms into node i (0 = reset) and redraws. */
  zoomTo(i) {
    this.zoom = i;
    this.render();
  }

  eventXY(e) {
    const r = this.canvas.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  }

  onClick(e) {
    performance.mark('hearth:zoom-start');
    const i = this.hit(...this.eventXY(e));
    if (i < 0) return;
    this.zoom = i;
    if (i > 0 && this.opts.focusOnClick) this.focus = this.t.fn ? this.t.fn[this.t.nameIdx[i]] : this.t.nameIdx[i];
    this.drawCanvas();
    performance.measure('hearth:flame-zoom', 'hearth:zoom-start');
    this.hideTip(); // it described the frame that was under the mouse before the zoom
    this.renderList();
    if (this.opts.onSelect) this.opts.onSelect(i);
  }

  onContext(e) {
    if (!this.opts.onContext) return;
    const i = this.hit(...this.eventXY(e));
    if (i <= 0) return;
    e.preventDefault();
    this.hideTip();
    this.opts.onContext(i);
  }

  onMove(e) {
    const [x, y] = this.eventXY(e);
    const i = this.hit(x, y);
    const tip = this.opts.tooltipEl;
    this.canvas.style.cursor = i >= 0 ? 'pointer' : 'default';
    if (i < 0 || !tip) {
      this.hideTip();
      return;
    }
    this.showHover(i);
    tip.innerHTML = this.opts.tooltip(this.t, i);
    tip.hidden = false;
    const pad = 14;
    const tw = tip.offsetWidth;
    const th = tip.offsetHeight;
    let left = e.clientX + pad;
    let top = e.clientY + pad;
    if (left + tw > window.innerWidth - 4) left = Math.max(4, e.clientX - tw - pad);
    if (top + th > window.innerHeight - 4) top = Math.max(4, e.clientY - th - pad);
    tip.style.left = left + 'px';
    tip.style.top = top + 'px';
  }

  hideTip() {
    if (this.opts.tooltipEl) this.opts.tooltipEl.hidden = true;
    this.hoverBox.hidden = true;
  }

  showHover(i) {
    let j = 0;
    while (j < this.drawn && this.dIdx[j] !== i) j++;
    if (j === this.drawn) return;
    const b = this.hoverBox.style;
    b.left = this.canvas.offsetLeft + this.dX[j] + 'px';
    b.top = this.canvas.offsetTop + this.rowY(this.t.depth[i]) + 'px';
    b.width = Math.max(1, this.dW[j] > 2 ? this.dW[j] - 1 : this.dW[j]) + 'px';
    b.height = ROW_H - 1 + 'px';
    this.hoverBox.hidden = false;
  }
}
