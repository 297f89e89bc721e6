// Unit tests of signif.js (the noise verdicts, their order and units): node web/test/signif.test.mjs
import assert from 'node:assert/strict';
import { fmtBare, fmtChange, fmtConfidence, fmtInterval, fmtLevel, fmtRelative, linePoints, normUnit,
  significant, sortBySignificance, sparkline, unitLabel, verdictMap, verdictOf } from '../js/signif.js';

let failed = 0;
function test(name, fn) {
  try { fn(); console.log('ok  ', name); } catch (e) { failed++; console.log('FAIL', name, '\n', e); }
}
const D = (change, verdict, low = change - 1, high = change + 1) => ({ left: 1, right: 1 + change, change, low, high, verdict });

test('verdicts by name, inlined frames find their row', () => {
  const m = verdictMap([
    { name: 'a', selfDiff: D(2, 'up'), totalDiff: D(2, 'up') },
    { name: 'b', selfDiff: { verdict: 'maybe' } }, // not a verdict the contract knows: none
    { name: 'c' },
  ]);
  assert.equal(m.get('a').self.verdict, 'up');
  assert.equal(m.get('b').self, null);
  assert.equal(m.get('c').total, null);
  assert.equal(verdictOf(m, 'a_[i]').self.change, 2);
  assert.equal(verdictOf(m, 'zzz'), undefined);
  assert.equal(verdictMap(undefined).size, 0);
});

test('significant first, largest change first, the rest in their order', () => {
  const rows = [
    { name: 'n1', selfDiff: D(9, 'noise', -1, 19) },
    { name: 's1', selfDiff: D(-3, 'down') },
    { name: 'n2', selfDiff: null },
    { name: 's2', selfDiff: D(5, 'up') },
    { name: 'n3', selfDiff: D(0.5, 'noise') },
  ];
  assert.deepEqual(sortBySignificance(rows).map((r) => r.name), ['s2', 's1', 'n1', 'n2', 'n3']);
  assert.equal(rows[0].name, 'n1'); // the input is not reordered
  assert.ok(significant(D(1, 'down')) && !significant(D(1, 'noise')) && !significant(null));
});

test('units: share in pp, rates per second', () => {
  assert.equal(normUnit('pp', 'share'), 'pp');
  assert.equal(normUnit('samples', 'share'), 'pp');
  assert.equal(normUnit('samples', 'rate'), 'samples/s');
  assert.equal(normUnit('nanoseconds/s', 'rate'), 'nanoseconds/s');
  assert.equal(fmtLevel(12.4, 'pp'), '12.40%');
  assert.equal(fmtLevel(35, 'samples/s'), '35.0 samples/s');
  assert.equal(fmtLevel(4.8e8, 'nanoseconds/s'), '0.48 CPU s/s');
  assert.equal(fmtLevel(2.5e6, 'nanoseconds/s'), '2.50 ms/s');
  assert.equal(fmtChange(1.25, 'pp'), '+1.25 pp');
  assert.equal(fmtChange(-0.4, 'pp'), '−0.40 pp');
  assert.equal(fmtChange(-6, 'samples/s'), '−6.00 samples/s');
  assert.equal(fmtInterval(0.8, 1.7, 'pp'), '+0.80 … +1.70 pp');
  assert.equal(fmtBare(-2.5e8, 'nanoseconds/s', true), '−0.25');
  assert.equal(fmtBare(12.345, 'pp'), '12.35');
  assert.equal(unitLabel('nanoseconds/s'), 'CPU s/s');
  assert.equal(unitLabel('samples/s'), 'samples/s');
  assert.equal(fmtRelative(0.6), '+60%');
  assert.equal(fmtRelative(-0.05), '−5.0%');
  assert.equal(fmtRelative(null), '');
  assert.equal(fmtConfidence(0.99), '99%');
  assert.equal(fmtConfidence(0.999), '99.9%');
});

test('lines: max at the top, zero at the bottom', () => {
  assert.equal(linePoints([0, 5, 10], 100, 20), '0.0,20.0 50.0,10.0 100.0,0.0');
  assert.equal(linePoints([0, 0], 10, 4), '0.0,4.0 10.0,4.0');
  assert.equal(linePoints([5], 10, 4, 10), '5.0,2.0');
  const s = sparkline([1, 2, 3]);
  assert.ok(s.includes('data-points="3"') && s.includes('data-sum="6"') && s.includes('<polyline'));
});

if (failed) {
  console.log(`${failed} failed`);
  process.exit(1);
}
console.log('all passed');
