// The UI reads times by the server's one rule: every row of
// tests/unit/data/times.tsv (also checked against src/base/timespec.c by
// tests/unit/test_query.c) must parse to the same nanoseconds, or be refused.
// The page's own reading (zone 'local': a time without a zone, today and
// yesterday in the browser's zone) is checked apart, in a zone that is not UTC.
// node web/test/time.test.mjs
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseTimeNs, toSec, durationSec, apiTime, keepTime, showTime, isoUTC, localDate }
  from '../js/timeparse.js';

process.env.TZ = 'America/New_York'; // UTC-5, UTC-4 in summer: local is not UTC here

let failed = 0;
function test(name, fn) {
  try { fn(); console.log('ok  ', name); } catch (e) { failed++; console.log('FAIL', name, '\n', e); }
}

const NOW_NS = 1700000000000000000n; // "now" in the table
const table = readFileSync(new URL('../../tests/unit/data/times.tsv', import.meta.url), 'utf8')
  .split('\n').filter((l) => l && !l.startsWith('#') && l.includes('\t'))
  .map((l) => { const i = l.indexOf('\t'); return [l.slice(0, i), l.slice(i + 1)]; });

test('the shared table has its rows', () => assert.ok(table.length > 40, `${table.length} rows`));
for (const [input, want] of table) {
  test(`time "${input}" is ${want}`, () => {
    assert.equal(parseTimeNs(input, NOW_NS), want === 'refused' ? null : BigInt(want));
  });
}
test('toSec gives the same instant in seconds, NaN when refused', () => {
  assert.equal(toSec('1700000000123', 0), 1700000000.123);
  assert.equal(toSec('now-1h', 7200), 3600);
  assert.ok(Number.isNaN(toSec('20000000000', 0)));
  assert.ok(Number.isNaN(toSec('now-1.5h', 7200)));
});
test('durationSec reads what the server reads after now-', () => {
  assert.equal(durationSec('1h30m'), 5400);
  assert.equal(durationSec('500ms'), 0.5);
  assert.ok(Number.isNaN(durationSec('1.5h')));
});

const ms = (...a) => new Date(...a).getTime();
const ns = (m) => BigInt(m) * 1000000n;
test('this test runs in a zone that is not UTC', () => {
  assert.notEqual(new Date(2026, 10, 27).getTimezoneOffset(), 0);
});
test('local: a time without a zone is the browser\'s wall clock', () => {
  assert.equal(parseTimeNs('2026-11-27T10:00', 0n, 'local'), ns(ms(2026, 10, 27, 10, 0)));
  assert.equal(parseTimeNs('2026-11-27 10:00:05.25', 0n, 'local'), ns(ms(2026, 10, 27, 10, 0, 5)) + 250000000n);
  assert.equal(parseTimeNs('2026-11-27', 0n, 'local'), ns(ms(2026, 10, 27)));
  assert.equal(parseTimeNs('2026-07-01', 0n, 'local'), ns(ms(2026, 6, 1)), 'summer time');
});
test('local: a time with a zone, a unix number and now-1h read as in UTC', () => {
  for (const s of ['2026-11-27T10:00:00Z', '2026-11-27T10:00+01:00', '1700000000', 'now-1h'])
    assert.equal(parseTimeNs(s, NOW_NS, 'local'), parseTimeNs(s, NOW_NS), s);
});
test('local: today and yesterday are local midnights', () => {
  const now = ms(2026, 10, 27, 0, 30); // 05:30 UTC: the UTC day is the same, its midnight is not
  assert.equal(parseTimeNs('today', ns(now), 'local'), ns(ms(2026, 10, 27)));
  assert.equal(parseTimeNs('yesterday', ns(now), 'local'), ns(ms(2026, 10, 26)));
  assert.equal(parseTimeNs('today+9h', ns(now), 'local'), ns(ms(2026, 10, 27)) + 9n * 3600n * 1000000000n);
  const late = ms(2026, 10, 27, 22, 0); // 03:00 UTC of the 28th
  assert.equal(parseTimeNs('today', ns(late), 'local'), ns(ms(2026, 10, 27)));
  assert.equal(parseTimeNs('today', ns(late)), ns(Date.UTC(2026, 10, 28)));
  // the day after the clocks go back has 25 hours: yesterday is still its midnight
  assert.equal(parseTimeNs('yesterday', ns(ms(2026, 10, 2, 12)), 'local'), ns(ms(2026, 10, 1)));
});
test('local: refusals are the same as the server\'s', () => {
  for (const s of ['2026-02-29T10:00', 'tomorrow', 'today-', '2026-11-27T24:00'])
    assert.equal(parseTimeNs(s, NOW_NS, 'local'), null, s);
});
test('apiTime sends what the page means, as the server reads it', () => {
  const now = ms(2026, 10, 27, 12, 0);
  assert.equal(apiTime('now-1h', now), 'now-1h');
  assert.equal(apiTime('1795773600', now), '1795773600');
  assert.equal(apiTime('2026-11-27T10:00Z', now), '2026-11-27T10:00Z');
  assert.equal(apiTime('2026-11-27T10:00:00-05:00', now), '2026-11-27T10:00:00-05:00');
  assert.equal(apiTime('2026-11-27 10:00', now), '2026-11-27T15:00:00Z');
  assert.equal(apiTime('2026-11-27 10:00:00.5', now), '2026-11-27T15:00:00.5Z');
  assert.equal(apiTime('today', now), '2026-11-27T05:00:00Z');
  assert.equal(apiTime('yesterday+1h', now), '2026-11-26T06:00:00Z');
  assert.equal(apiTime('noon', now), 'noon');
  for (const s of ['2026-11-27 10:00', 'today', 'yesterday+1h']) {
    assert.equal(parseTimeNs(apiTime(s, now), ns(now)), parseTimeNs(s, ns(now), 'local'), s);
  }
});
test('keepTime: fixed instants as unix seconds, relative times as written', () => {
  assert.equal(keepTime('2026-11-27 10:00'), String(ms(2026, 10, 27, 10) / 1000));
  assert.equal(keepTime('2026-11-27T10:00:00Z'), '1795773600');
  assert.equal(keepTime('1795773600000'), '1795773600');
  assert.equal(keepTime('2026-11-27T10:00:00.5Z'), '2026-11-27T10:00:00.5Z');
  assert.equal(keepTime('1969-12-31'), '1969-12-31T00:00:00Z'.replace('T00', 'T05'));
  assert.equal(keepTime('yesterday'), 'yesterday');
  assert.equal(keepTime('now-15m'), 'now-15m');
  assert.equal(keepTime('2026-02-30'), null);
});
test('showTime shows unix numbers as local dates that read back', () => {
  const s = showTime('1795773600');
  assert.equal(s, localDate(1795773600000));
  assert.match(s, /^2026-11-27 05:00:00$/);
  assert.equal(parseTimeNs(s, 0n, 'local'), 1795773600n * 1000000000n);
  assert.equal(showTime('now-1h'), 'now-1h');
  assert.equal(showTime('2026-11-27T10:00:00.5Z'), '2026-11-27T10:00:00.5Z');
});
test('isoUTC writes any instant, before 1970 too', () => {
  assert.equal(isoUTC(-1n), '1969-12-31T23:59:59.999999999Z');
  assert.equal(isoUTC(1795773600000000000n), '2026-11-27T10:00:00Z');
});

console.log(failed ? `${failed} failed` : 'all passed');
process.exit(failed ? 1 : 0);
