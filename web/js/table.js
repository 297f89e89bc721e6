// The top-functions table (sortable, filterable, linked to the flame graph) and the
// diff table. Only the first ROW_CAP rows of a sort/filter are put in the DOM; the
// note under the table says how many more there are and that the filter narrows.
// Each row's name cell starts with a small button that draws the function's line
// over time (button.series-btn, data-series = the name).

import { esc, fmtInt, fmtPct, fmtPP, fmtValue } from './format.js';
import { fmtBare, fmtChange, fmtInterval, fmtLevel, fmtRelative, significant, sparkline, verdictText } from './signif.js';

const ROW_CAP = 500;

/** The name cell's "over time" button. */
const seriesBtn = (n) => `<button type="button" class="series-btn" data-series="${n}" ` +
  `title="${n} over time" aria-label="Show ${n} over time">∿</button>`;

/** Calls onSeries(name) for a click on a row's series button; true when it was one. */
function seriesClick(e, onSeries) {
  const b = e.target.closest('button.series-btn');
  if (!b || !onSeries) return false;
  onSeries(b.dataset.series);
  return true;
}

export class TopTable {
  /**
   * table: #top-table; filter: #top-filter; note: where "N more" goes; onSelect(name);
   * onSeries(name): a row's series button was clicked; onSort(key, dir): a header
   * click changed the order (the page keeps it in the URL).
   */
  constructor(table, filter, note, onSelect, onSeries, onSort) {
    this.table = table;
    this.body = table.tBodies[0];
    this.filter = filter;
    this.note = note;
    this.rows = [];
    this.grand = 0;
    // Self first: what a function costs itself (by total, _start and main lead).
    this.key = 'self';
    this.dir = 'descending';
    this.match = null;
    this.selected = null;
    this.colorOf = () => 'transparent';
    table.tHead.addEventListener('click', (e) => {
      const th = e.target.closest('th[data-sort]');
      if (!th) return;
      const k = th.dataset.sort;
      if (k === this.key) this.dir = this.dir === 'descending' ? 'ascending' : 'descending';
      else {
        this.key = k;
        this.dir = k === 'name' ? 'ascending' : 'descending';
      }
      this.render();
      if (onSort) onSort(this.key, this.dir);
    });
    filter.addEventListener('input', () => this.render());
    this.body.addEventListener('click', (e) => {
      const tr = e.target.closest('tr[data-name]');
      if (tr) onSelect(tr.dataset.name);
      seriesClick(e, onSeries);
    });
  }

  /** Sets the order (key: name, self or total; dir: ascending or descending) without drawing. */
  setSort(key, dir) {
    this.key = key;
    this.dir = dir;
  }

  /** rows: topRows() output; grand: the profile's total samples. */
  setRows(rows, grand, colorOf) {
    this.rows = rows;
    this.grand = grand;
    if (colorOf) this.colorOf = colorOf;
    this.render();
  }

  /** match: whether a function name matches the search, or null. */
  setMatch(match) {
    this.match = match;
    for (const tr of this.body.rows) {
      if (match && match(tr.dataset.name)) tr.dataset.match = '1';
      else delete tr.dataset.match;
    }
  }

  /** Marks the row of name as selected and scrolls it into view. */
  setSelected(name) {
    this.selected = name;
    let found = null;
    for (const tr of this.body.rows) {
      const on = tr.dataset.name === name;
      if (on) found = tr;
      if (on) tr.setAttribute('aria-selected', 'true');
      else tr.removeAttribute('aria-selected');
    }
    if (found) found.scrollIntoView({ block: 'nearest' });
  }

  render() {
    for (const th of this.table.tHead.querySelectorAll('th[data-sort]')) {
      if (th.dataset.sort === this.key) th.setAttribute('aria-sort', this.dir);
      else th.removeAttribute('aria-sort');
    }
    const f = this.filter.value.trim().toLowerCase();
    const rows = f ? this.rows.filter((r) => r.name.toLowerCase().includes(f)) : this.rows.slice();
    const k = this.key;
    const sign = this.dir === 'ascending' ? 1 : -1;
    rows.sort(k === 'name'
      ? (a, b) => sign * (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
      : (a, b) => sign * (a[k] - b[k]) || (a.name < b.name ? -1 : 1));
    const shown = rows.slice(0, ROW_CAP);
    const g = this.grand;
    this.body.innerHTML = shown.map((r) => {
      const n = esc(r.name);
      const m = this.match && this.match(r.name) ? ' data-match="1"' : '';
      const s = r.name === this.selected ? ' aria-selected="true"' : '';
      return `<tr data-name="${n}" data-id="${r.nameIdx}" data-self="${r.self}" data-total="${r.total}"${m}${s}>` +
        `<td class="name bar-cell" title="${n}" style="--p:${g ? ((100 * r.total) / g).toFixed(1) : 0}%">` +
        `${seriesBtn(n)}<span class="swatch" style="background:${this.colorOf(r)}"></span>${n}</td>` +
        `<td class="num">${fmtValue(r.self)}</td><td class="num pct">${fmtPct(r.self, g)}</td>` +
        `<td class="num">${fmtValue(r.total)}</td><td class="num pct">${fmtPct(r.total, g)}</td></tr>`;
    }).join('');
    let note = '';
    if (!this.rows.length) note = 'No functions.';
    else if (f && !rows.length) note = `No function matches “${this.filter.value.trim()}”.`;
    else if (rows.length > ROW_CAP) note = `Showing ${fmtInt(ROW_CAP)} of ${fmtInt(rows.length)} functions; type in the filter to narrow.`;
    this.note.textContent = note;
  }
}

/**
 * Fills #diff-table with diffRows() output, in the order given. sig: the answer's
 * significance ({unit (normUnit), confidence}) when the server judged noise, else
 * null: then the cells are self samples and the change of share, as before.
 * With sig, Before/After/Change are bare numbers in its unit (the caller names it
 * above the table; the cells' titles spell it out), "±" is half the interval, and a
 * row within noise is muted (tr.noise) and not coloured.
 */
export function renderDiffTable(table, rows, onSelect, onSeries, sig = null) {
  const body = table.tBodies[0];
  body.innerHTML = rows.slice(0, ROW_CAP).map((r) => {
    const n = esc(r.name);
    const d = sig ? r.selfDiff : null;
    let a = `<tr data-name="${n}" data-left="${r.left}" data-right="${r.right}" data-delta="${r.delta.toFixed(4)}"`;
    if (!d) {
      const cls = r.delta > 0 ? 'pos' : r.delta < 0 ? 'neg' : '';
      return `${a}><td class="name" title="${n}">${seriesBtn(n)}${n}</td><td class="num">${fmtValue(r.left)}</td>` +
        `<td class="num">${fmtValue(r.right)}</td><td class="num ${cls}">${fmtPP(r.delta)}</td><td class="num"></td></tr>`;
    }
    const u = sig.unit;
    const cls = significant(d) ? (d.verdict === 'up' ? 'pos' : 'neg') : '';
    a += ` data-verdict="${d.verdict}" data-change="${d.change}" data-low="${d.low}" data-high="${d.high}"` +
      ` data-before="${d.left}" data-after="${d.right}" class="${d.verdict}"`;
    const title = esc(`${fmtInterval(d.low, d.high, u)}: ${verdictText(d, sig.confidence)}`);
    return `${a}><td class="name" title="${n}">${seriesBtn(n)}${n}</td>` +
      `<td class="num" title="${esc(`${fmtLevel(d.left, u)} (${fmtValue(r.left)} self)`)}">${fmtBare(d.left, u)}</td>` +
      `<td class="num" title="${esc(`${fmtLevel(d.right, u)} (${fmtValue(r.right)} self)`)}">${fmtBare(d.right, u)}</td>` +
      `<td class="num ${cls}" title="${title}">${fmtBare(d.change, u, true)}</td>` +
      `<td class="num" title="${title}">${fmtBare(Math.max(d.high - d.change, d.change - d.low), u)}</td></tr>`;
  }).join('');
  body.onclick = (e) => {
    const tr = e.target.closest('tr[data-name]');
    if (tr) onSelect(tr.dataset.name);
    seriesClick(e, onSeries);
  };
}

/**
 * Fills #changes-table with the /api/regressions answer's functions (the server's
 * order: largest |change| first). unit: normUnit() of the answer; onSeries(name)
 * for a click anywhere on a row.
 */
export function renderChangesTable(table, functions, unit, confidence, onSeries) {
  const body = table.tBodies[0];
  body.innerHTML = functions.slice(0, ROW_CAP).map((f) => {
    const n = esc(f.name);
    const v = f.verdict === 'down' ? 'down' : 'up';
    const s = f.series || {};
    const title = esc(`${fmtInterval(f.low, f.high, unit)}: ${verdictText({ verdict: v }, confidence)}`);
    return `<tr data-name="${n}" data-before="${f.before}" data-after="${f.after}" data-change="${f.change}"` +
      ` data-low="${f.low}" data-high="${f.high}" data-verdict="${v}" class="${v}" title="${n}: click for its line over time">` +
      `<td class="name" title="${n}">${seriesBtn(n)}${n}</td>` +
      `<td class="num">${fmtLevel(+f.before || 0, unit)}</td><td class="num">${fmtLevel(+f.after || 0, unit)}</td>` +
      `<td class="num ${v === 'up' ? 'pos' : 'neg'}">${fmtChange(+f.change || 0, unit)}</td>` +
      `<td class="num">${fmtRelative(f.relative) || 'new'}</td>` +
      `<td class="num" title="${title}">${fmtInterval(+f.low || 0, +f.high || 0, unit)}</td>` +
      `<td>${sparkline(s.values)}</td></tr>`;
  }).join('');
  body.onclick = (e) => {
    const tr = e.target.closest('tr[data-name]');
    if (tr && onSeries) onSeries(tr.dataset.name);
  };
}
