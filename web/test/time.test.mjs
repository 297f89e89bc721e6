// The UI reads times by the server's one rule: every row of
// tests/unit/data/times.tsv (also checked against src/base/timespec.c by
// tests/unit/test_query.c) must parse to the same nanoseconds, or be refused.
// node web/test/time.test.mjs
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseTimeNs, toSec, durationSec } from '../js/timeparse.js';

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

console.log(failed ? `${failed} failed` : 'all passed');
process.exit(failed ? 1 : 0);
