// Unit tests of api.js's pure parts (where login.html may send the page back to): node web/test/api.test.mjs
import assert from 'node:assert/strict';
import { apiUrl, loginTarget } from '../js/api.js';

let failed = 0;
function test(name, fn) {
  try { fn(); console.log('ok  ', name); } catch (e) { failed++; console.log('FAIL', name, '\n', e); }
}

test('login goes back to a path of this server', () => {
  assert.equal(loginTarget('?next=%2F%3Ffrom%3Dnow-3h%23x'), '/?from=now-3h#x');
  assert.equal(loginTarget('?next=/js/app.js'), '/js/app.js');
});
test('login never leaves for another site', () => {
  for (const s of ['?next=//evil.example/', '?next=/\\evil.example', '?next=https://evil.example/',
    '?next=javascript:alert(1)', '?next=', '', '?other=1']) {
    assert.equal(loginTarget(s), '/', s);
  }
});
test('api URLs drop empty parameters', () => {
  assert.equal(apiUrl('/api/x', { a: '1', b: '', c: null, d: undefined }), '/api/x?a=1');
  assert.equal(apiUrl('/api/x', {}), '/api/x');
});
if (failed) process.exit(1);
