// Autocomplete for the selector box: label names after "{" or ",", values after
// name=, name!=, name=~, name!~, and metric names (__name__) before any "{".
// Names and values come from /api/labels and /api/label/NAME/values, cached.

import { getJSON } from './api.js';
import { esc } from './format.js';

const MAX_SHOWN = 50;

/**
 * The completion context at the caret: {kind: 'label'|'value'|'name', label,
 * prefix, start, end} where [start, end) is the text the choice replaces.
 */
export function completionContext(text, caret) {
  const pre = text.slice(0, caret);
  let inQuote = false;
  let open = -1;
  let segStart = 0;
  for (let k = 0; k < pre.length; k++) {
    const ch = pre[k];
    if (inQuote) {
      if (ch === '\\') k++;
      else if (ch === '"') inQuote = false;
      continue;
    }
    if (ch === '"') inQuote = true;
    else if (ch === '{') { open = k; segStart = k + 1; }
    else if (ch === '}') { open = -1; segStart = k + 1; }
    else if (ch === ',' && open >= 0) segStart = k + 1;
  }
  const seg = pre.slice(segStart);
  if (open < 0) {
    if (segStart > 0) return null; // after "}"
    const m = /^\s*([a-zA-Z_:][\w:.]*)?$/.exec(seg);
    return m ? { kind: 'name', prefix: m[1] || '', start: segStart + seg.length - (m[1] || '').length, end: caret } : null;
  }
  let m = /^\s*([a-zA-Z_][\w.]*)?$/.exec(seg);
  if (m) {
    const p = m[1] || '';
    return { kind: 'label', prefix: p, start: caret - p.length, end: caret };
  }
  m = /^\s*([a-zA-Z_][\w.]*)\s*(=~|!~|!=|=)\s*("?)((?:[^"\\]|\\.)*)$/.exec(seg);
  if (m) {
    const start = caret - m[4].length - m[3].length;
    let end = caret;
    if (m[3] && text[caret] === '"') end = caret + 1; // eat the closing quote
    return { kind: 'value', label: m[1], prefix: m[4], start, end };
  }
  return null;
}

/**
 * The selector `query` restricted to profile type `type` ('' = as typed: the
 * server then means CPU): `{a="b"}` -> `{a="b",__profile_type__="T"}`, `app` ->
 * `app{__profile_type__="T"}`, '' -> `{__profile_type__="T"}`. A query that
 * names __profile_type__ itself is left alone.
 */
export function withType(query, type) {
  const q = (query || '').trim();
  if (!type || /__profile_type__\s*[=!]/.test(q)) return q;
  return withMatcher(q, `__profile_type__="${type.replace(/["\\]/g, '\\$&')}"`);
}

/** The selector `query` with one more matcher `m` (`name="v"`) inside its braces. */
export function withMatcher(query, m) {
  const q = (query || '').trim();
  if (!q) return `{${m}}`;
  if (!q.endsWith('}')) return `${q}{${m}}`;
  const body = q.slice(q.indexOf('{') + 1, -1).trim();
  return `${q.slice(0, q.indexOf('{'))}{${body ? `${body}, ` : ''}${m}}`;
}

/**
 * The selector `query` leaving out the series whose `label` is one of `values`
 * (the off-CPU reason filter): `{a="b"}` + [sleep, other] ->
 * `{a="b", reason!~"sleep|other"}`. No values: `query` as it is.
 */
export function without(query, label, values) {
  const vs = values.filter((v) => v !== '');
  if (!vs.length) return (query || '').trim();
  const re = vs.map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  return withMatcher(query, `${label}!~"${re.replace(/["\\]/g, '\\$&')}"`);
}

export class QueryBar {
  /** input: #query; list: #query-suggest; onApply(): Enter without a choice. */
  constructor(input, list, onApply) {
    this.input = input;
    this.list = list;
    this.onApply = onApply;
    this.labels = null;
    this.values = new Map();
    this.items = [];
    this.active = -1;
    this.ctx = null;
    this.seq = 0;
    input.addEventListener('input', () => this.refresh());
    input.addEventListener('focus', () => this.refresh());
    input.addEventListener('click', () => this.refresh());
    input.addEventListener('blur', () => setTimeout(() => this.close(), 150));
    input.addEventListener('keydown', (e) => this.key(e));
    list.addEventListener('mousedown', (e) => {
      const li = e.target.closest('li[role="option"]');
      if (!li) return;
      e.preventDefault();
      this.accept(Number(li.dataset.i));
    });
  }

  async labelNames() {
    if (!this.labels) {
      try {
        const l = await getJSON('/api/labels');
        this.labels = (Array.isArray(l) ? l : []).filter((n) => n !== '__profile_type__')
          .sort((a, b) => (a.startsWith('__') - b.startsWith('__')) || (a < b ? -1 : 1));
      } catch {
        return [];
      }
    }
    return this.labels;
  }

  async labelValues(name) {
    if (!this.values.has(name)) {
      try {
        const v = await getJSON(`/api/label/${encodeURIComponent(name)}/values`);
        this.values.set(name, Array.isArray(v) ? v.map(String) : []);
      } catch {
        return [];
      }
    }
    return this.values.get(name);
  }

  /** Forgets cached names and values (after a time range change). */
  invalidate() {
    this.labels = null;
    this.values.clear();
  }

  async refresh() {
    const seq = ++this.seq;
    const text = this.input.value;
    const ctx = completionContext(text, this.input.selectionStart ?? text.length);
    let items = [];
    if (ctx) {
      let pool;
      if (ctx.kind === 'label') pool = await this.labelNames();
      else if (ctx.kind === 'value') pool = await this.labelValues(ctx.label);
      else pool = text.trim() === '' ? await this.labelNames() : await this.labelValues('__name__');
      const p = ctx.prefix.toLowerCase();
      items = pool.filter((s) => s.toLowerCase().startsWith(p) && s !== ctx.prefix);
      const more = pool.filter((s) => !s.toLowerCase().startsWith(p) && s.toLowerCase().includes(p));
      items = items.concat(more).slice(0, MAX_SHOWN);
    }
    if (seq !== this.seq) return; // a newer keystroke won
    this.ctx = ctx;
    this.items = items;
    this.active = -1;
    this.show();
  }

  show() {
    const empty = !this.items.length || document.activeElement !== this.input;
    this.list.hidden = empty;
    this.input.setAttribute('aria-expanded', String(!empty));
    if (empty) {
      this.list.innerHTML = '';
      return;
    }
    const kind = this.ctx.kind === 'value' ? `${this.ctx.label} value`
      : this.ctx.kind === 'label' || this.input.value.trim() === '' ? 'label' : 'name';
    this.list.innerHTML = this.items.map((s, k) =>
      `<li role="option" id="qs-${k}" data-i="${k}" data-kind="${esc(kind)}"` +
      ` aria-selected="${k === this.active}">${esc(s)}</li>`).join('');
    if (this.active >= 0) {
      this.input.setAttribute('aria-activedescendant', `qs-${this.active}`);
      this.list.children[this.active].scrollIntoView({ block: 'nearest' });
    } else {
      this.input.removeAttribute('aria-activedescendant');
    }
  }

  close() {
    this.items = [];
    this.show();
  }

  key(e) {
    const open = !this.list.hidden && this.items.length;
    if (e.key === 'ArrowDown' && open) {
      this.active = (this.active + 1) % this.items.length;
      this.show();
      e.preventDefault();
    } else if (e.key === 'ArrowUp' && open) {
      this.active = (this.active - 1 + this.items.length) % this.items.length;
      this.show();
      e.preventDefault();
    } else if ((e.key === 'Enter' || e.key === 'Tab') && open && this.active >= 0) {
      this.accept(this.active);
      e.preventDefault();
    } else if (e.key === 'Escape' && open) {
      this.close();
      e.preventDefault();
    } else if (e.key === 'Enter') {
      this.close();
      e.preventDefault();
      this.onApply();
    }
  }

  /** Puts item k into the text at the context and moves the caret after it. */
  accept(k) {
    const ctx = this.ctx;
    const s = this.items[k];
    if (!ctx || s === undefined) return;
    const text = this.input.value;
    // Close the selector when nothing after the choice does.
    const close = text.slice(ctx.end).includes('}') ? '' : '}';
    let ins;
    let caretBack = 0;
    if (ctx.kind === 'value') {
      ins = '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"' + close;
      caretBack = close.length;
    } else if (ctx.kind === 'label') {
      ins = `${s}=""${close}`;
      caretBack = 1 + close.length;
    } else if (text.trim() === '') {
      ins = `{${s}=""}`;
      caretBack = 2;
    } else {
      ins = s;
    }
    this.input.value = text.slice(0, ctx.start) + ins + text.slice(ctx.end);
    const caret = ctx.start + ins.length - caretBack;
    this.input.setSelectionRange(caret, caret);
    this.input.focus();
    this.refresh();
  }
}
