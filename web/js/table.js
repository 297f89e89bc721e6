// The top-functions table (sortable, filterable, linked to the flame graph) and the
// diff table. Only the first ROW_CAP rows of a sort/filter are put in the DOM; the
// note under the table says how many more there are and that the filter narrows.

import { esc, fmtInt, fmtPct, fmtPP, fmtValue } from './format.js';

const ROW_CAP = 500;

export class TopTable {
  /** table: #top-table; filter: #top-filter; note: where "N more" goes; onSelect(name). */
  constructor(table, filter, note, onSelect) {
    this.table = table;
    this.body = table.tBodies[0];
    this.filter = filter;
    this.note = note;
    this.rows = [];
    this.grand = 0;
    this.key = 'total';
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
    });
    filter.addEventListener('input', () => this.render());
    this.body.addEventListener('click', (e) => {
      const tr = e.target.closest('tr[data-name]');
      if (tr) onSelect(tr.dataset.name);
    });
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
        `<span class="swatch" style="background:${this.colorOf(r)}"></span>${n}</td>` +
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

/** Fills #diff-table with diffRows() output (largest |delta| first). */
export function renderDiffTable(table, rows, onSelect) {
  const body = table.tBodies[0];
  body.innerHTML = rows.slice(0, ROW_CAP).map((r) => {
    const n = esc(r.name);
    const cls = r.delta > 0 ? 'pos' : r.delta < 0 ? 'neg' : '';
    return `<tr data-name="${n}" data-left="${r.left}" data-right="${r.right}" data-delta="${r.delta.toFixed(4)}">` +
      `<td class="name" title="${n}">${n}</td><td class="num">${fmtValue(r.left)}</td>` +
      `<td class="num">${fmtValue(r.right)}</td><td class="num ${cls}">${fmtPP(r.delta)}</td></tr>`;
  }).join('');
  body.onclick = (e) => {
    const tr = e.target.closest('tr[data-name]');
    if (tr) onSelect(tr.dataset.name);
  };
}
