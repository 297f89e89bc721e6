// The time range controls of the query bar: the preset list, the from/until boxes
// (shown when the range is not a preset) with a date/time picker each, and the
// check of what was typed. The boxes show fixed instants as local dates
// ("2026-11-27 10:00:00", brushing included) and take any time the one grammar
// reads (timeparse.js); the URL keeps fixed instants as unix seconds. A refused
// time, here or by the server, outlines the box at fault, not the selector.

import { keepTime, localDate, parseTimeNs, showTime } from './timeparse.js';

/** [value of the <option>, from, until]: the presets of #range. */
export const RANGE_PRESETS = [
  ['5m', 'now-5m', 'now'], ['15m', 'now-15m', 'now'], ['1h', 'now-1h', 'now'], ['6h', 'now-6h', 'now'],
  ['24h', 'now-24h', 'now'], ['7d', 'now-7d', 'now'], ['today', 'today', 'now'],
  ['yesterday', 'yesterday', 'today'],
];

const WANT = 'want now, now-1h30m, today, yesterday+9h, 2026-11-27 10:00 (your time zone), ' +
  '2026-11-27T10:00Z, or a unix time';

export class RangeBar {
  /** $: the page's querySelector; onApply(): Enter in a box, or a preset picked. */
  constructor($, onApply) {
    this.select = $('#range');
    this.box = $('#custom-range');
    this.inputs = { from: $('#from'), until: $('#until') };
    this.onApply = onApply;
    this.select.addEventListener('change', () => {
      const custom = this.select.value === 'custom';
      this.box.hidden = !custom;
      if (custom) this.inputs.from.focus();
      else onApply();
    });
    for (const [k, input] of Object.entries(this.inputs)) {
      input.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') onApply();
      });
      input.addEventListener('input', () => input.removeAttribute('aria-invalid'));
      const pick = $(`#${k}-pick`);
      const button = $(`button[data-pick="${k}"]`);
      if (pick && button) this.wirePicker(input, pick, button);
    }
  }

  // The native date/time picker fills the box with a local date; Apply loads it.
  wirePicker(input, pick, button) {
    button.addEventListener('click', () => {
      const ns = parseTimeNs(input.value.trim(), BigInt(Date.now()) * 1000000n, 'local');
      const at = ns === null ? Date.now() : Number(ns / 1000000n);
      pick.value = localDate(at).replace(' ', 'T');
      try {
        pick.showPicker();
      } catch {
        pick.focus(); // a browser without showPicker: the field itself
      }
    });
    pick.addEventListener('change', () => {
      if (!pick.value) return;
      const v = pick.value.replace('T', ' ');
      input.value = v.length === 16 ? `${v}:00` : v;
      input.removeAttribute('aria-invalid');
      input.focus();
    });
  }

  /** Shows the range from..until: its preset, or the boxes with dates. */
  sync(from, until) {
    const p = RANGE_PRESETS.find(([, f, u]) => f === from && u === until);
    this.select.value = p ? p[0] : 'custom';
    this.box.hidden = !!p;
    this.inputs.from.value = showTime(from);
    this.inputs.until.value = showTime(until);
  }

  /**
   * The range chosen, as the URL keeps it: {from, until}, or {error} with the box
   * at fault outlined. Empty boxes: the last hour.
   */
  read() {
    this.clear();
    const v = this.select.value;
    const p = RANGE_PRESETS.find(([k]) => k === v);
    if (p) return { from: p[1], until: p[2] };
    const out = {};
    for (const [k, input] of Object.entries(this.inputs)) {
      const typed = input.value.trim() || (k === 'from' ? 'now-1h' : 'now');
      out[k] = keepTime(typed);
      if (out[k] === null) {
        this.blame(k);
        return { error: `${k}: invalid time "${typed}" (${WANT})` };
      }
    }
    const now = BigInt(Date.now()) * 1000000n;
    if (parseTimeNs(out.from, now, 'local') > parseTimeNs(out.until, now, 'local')) {
      this.blame('from');
      return { error: `from (${this.inputs.from.value.trim()}) is after until (${this.inputs.until.value.trim() || 'now'})` };
    }
    return out;
  }

  /** Outlines the box a message of the server names ("from: …", "until: …",
   * "from (…) is after until"); false when it names neither. */
  blameMessage(msg) {
    const m = /^(from|until)\b/.exec(msg || '');
    if (!m) return false;
    this.blame(m[1]);
    return true;
  }

  blame(k) {
    if (this.select.value !== 'custom') {
      this.select.value = 'custom';
      this.box.hidden = false;
    }
    this.inputs[k].setAttribute('aria-invalid', 'true');
  }

  clear() {
    for (const input of Object.values(this.inputs)) input.removeAttribute('aria-invalid');
  }
}
