// Unit tests of the off-CPU and wall-clock helpers (format.js, querybar.js,
// colors.js): node web/test/offcpu.test.mjs
import assert from 'node:assert/strict';
import { hasReasons, typeLabel } from '../js/format.js';
import { without, withType } from '../js/querybar.js';
import { colorIndex, PAL_WAIT, waitReason } from '../js/colors.js';

const OFF = 'off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds';
const WALL = 'wall:wall:nanoseconds:wall:nanoseconds';
let failed = 0;
function test(name, fn) {
  try { fn(); console.log('ok  ', name); } catch (e) { failed++; console.log('FAIL', name, '\n', e); }
}

test('the picker names time types in time', () => {
  assert.equal(typeLabel(OFF), 'off-CPU time (ms, s)');
  assert.equal(typeLabel(WALL), 'wall-clock time (ms, s)');
  assert.equal(typeLabel('memory:inuse_space:bytes:space:bytes'), 'memory: inuse_space (bytes)');
  assert.equal(typeLabel('block:delay:nanoseconds:contentions:count'), 'block: delay (time)');
  assert.ok(hasReasons(OFF) && hasReasons(WALL) && !hasReasons('') && !hasReasons('memory:a:b:c:d'));
});
test('the reason filter adds one regex matcher', () => {
  assert.equal(without(withType('', OFF), 'reason', []), `{__profile_type__="${OFF}"}`);
  assert.equal(without(withType('{host="a"}', OFF), 'reason', ['sleep', 'other']),
    `{host="a", __profile_type__="${OFF}", reason!~"sleep|other"}`);
  assert.equal(without('app', 'reason', ['a.b']), 'app{reason!~"a\\\\.b"}');
});
test('waiting frames get their reason colour', () => {
  assert.equal(waitReason('[off-cpu: io]'), 'io');
  assert.equal(waitReason('[on-cpu]'), 'running');
  assert.equal(waitReason('[task]'), null);
  assert.equal(colorIndex('[off-cpu: runqueue]'), PAL_WAIT);
  assert.notEqual(colorIndex('[off-cpu: io]'), colorIndex('[off-cpu: lock]'));
  assert.equal(colorIndex('[off-cpu: weird]'), colorIndex('[off-cpu: other]'));
  assert.ok(colorIndex('main') < PAL_WAIT);
});
process.exit(failed ? 1 : 0);
