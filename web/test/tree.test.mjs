// Unit tests of the UI's pure modules: node web/test/tree.test.mjs
import assert from 'node:assert/strict';
import { treeArrays, topRows, searchTree, compileSearch, sandwich, diffRows, changeOf, nameOf, linkFunctions,
  fnOf, fnId, diffSide, halves, markGroups, groupParts } from '../js/tree.js';
import { groupColor, packageOf } from '../js/colors.js';
import { completionContext } from '../js/querybar.js';
import { durationSec, fmtDuration, stepFor, toSec } from '../js/timeparse.js';

let failed = 0;
function test(name, fn) {
  try { fn(); console.log('ok  ', name); } catch (e) { failed++; console.log('FAIL', name, '\n', e); }
}
const N = (name, self, total, children = []) => ({ name, self, total, children });
// main -> a -> b -> a (recursion), main -> c -> b
const tree = N('total', 0, 100, [N('main', 0, 100, [
  N('a', 10, 70, [N('b', 20, 60, [N('a', 40, 40)])]),
  N('c', 5, 30, [N('b', 25, 25)]),
])]);

test('treeArrays keeps pre-order, x ranges and subtree ends', () => {
  const t = treeArrays(tree);
  assert.equal(t.n, 7);
  assert.deepEqual([...t.depth], [0, 1, 2, 3, 4, 2, 3]);
  assert.equal(nameOf(t, 0), 'all');
  assert.equal(nameOf(t, 5), 'c');
  assert.equal(t.start[5], 70);
  assert.equal(t.end[1], 7);
  assert.equal(t.end[2], 5);
  assert.equal(t.maxDepth, 4);
});

test('topRows keeps the server\'s rows and links them to the tree', () => {
  const t = treeArrays(tree);
  const top = { unit: 'samples', total: 10, rows: [
    { name: 'b', self: 6, total: 6 }, { name: 'gone', self: 3, total: 3 }, { name: 'a', self: 1, total: 10 }] };
  const rows = topRows(top, t);
  assert.deepEqual(rows.map((r) => [r.name, r.self, r.total]), [['b', 6, 6], ['gone', 3, 3], ['a', 1, 10]]);
  const b = rows[0];
  assert.equal(t.names[b.nameIdx], 'b');
  assert.equal(nameOf(t, b.first), 'b');
  assert.equal(rows[1].nameIdx, -1); // pruned from the tree, still a row
  assert.equal(rows[1].first, -1);
  assert.deepEqual(topRows(null, t), []);
});

test('search share counts each sample once', () => {
  const t = treeArrays(tree);
  assert.equal(searchTree(t, compileSearch('B')).matched, 85);
  assert.equal(searchTree(t, compileSearch('ai')).matched, 100);
  assert.equal(searchTree(t, compileSearch('/^(a|b)$/')).matched, 95);
  assert.equal(searchTree(t, compileSearch('zzz')).matched, 0);
  assert.ok(compileSearch('/(/').error.startsWith('Bad regular expression'));
  assert.equal(compileSearch('  '), null);
});

test('sandwich callers/callees without double counting', () => {
  const s = sandwich(treeArrays(tree), 'a');
  assert.equal(s.callees.total, 70);
  assert.equal(s.callees.children[0].name, 'b');
  assert.equal(s.callees.children[0].children[0].name, 'a');
  assert.equal(s.callers.total, 70);
  assert.equal(s.callers.children.length, 1);
  assert.equal(s.callers.children[0].name, 'main');
  const b = sandwich(treeArrays(tree), 'b');
  assert.equal(b.callers.total, 85);
  assert.deepEqual(b.callers.children.map((c) => [c.name, c.total]), [['a', 60], ['c', 25]]);
  assert.equal(sandwich(treeArrays(tree), 'nope'), null);
});

test('diff rows and change', () => {
  const P = (name, s, t, children = []) => ({ name, self: s, total: t, children });
  const d = P('total', [0, 0], [100, 200], [P('x', [80, 40], [80, 40]), P('y', [20, 160], [20, 160])]);
  const t = treeArrays(d, { left: 100, right: 200 });
  // the server's table, in its order; the rows keep it and its numbers
  const functions = [
    { name: 'x', self: [80, 40], total: [80, 40], selfChange: -40, totalChange: -40, shareChange: -60 },
    { name: 'y', self: [20, 160], total: [20, 160], selfChange: 140, totalChange: 140, shareChange: 60 },
  ];
  const rows = diffRows(functions);
  assert.deepEqual(rows, [
    { name: 'x', left: 80, right: 40, delta: -60, selfDiff: null, totalDiff: null },
    { name: 'y', left: 20, right: 160, delta: 60, selfDiff: null, totalDiff: null },
  ]);
  assert.deepEqual(diffRows(undefined), []);
  assert.ok(Math.abs(changeOf(t, 2) - 60) < 1e-9);
  assert.ok(Math.abs(t.size[0] - 1) < 1e-9);
});

test('package names', () => {
  assert.equal(packageOf('github.com/x/y.(*T).Run'), 'github.com/x/y');
  assert.equal(packageOf('runtime.mallocgc'), 'runtime');
  assert.equal(packageOf('std::vector<int>::push_back'), 'std');
  assert.equal(packageOf('do_syscall_64_[k]'), '[kernel]');
  assert.equal(packageOf('libc.so.6`read'), 'libc.so.6');
  assert.equal(packageOf('main'), 'main');
  assert.equal(packageOf('x', '/usr/lib/libz.so.1'), 'libz.so.1');
});

test('a quick tree keeps the wide frames at the same x', () => {
  const full = treeArrays(tree);
  const quick = treeArrays(tree, null, 'all', 30);
  // kept: all(100), main(100), a(70), b(60), a(40), c(30); b under c (25) is left out
  assert.equal(quick.n, 6);
  const xs = (t) => Array.from({ length: t.n }, (_, i) => `${nameOf(t, i)}@${t.depth[i]}:${t.start[i]}`);
  const fx = new Set(xs(full));
  for (const k of xs(quick)) assert.ok(fx.has(k), k);
  assert.equal(quick.end[0], 6);
});

test('time expressions', () => {
  assert.equal(toSec('now', 1000), 1000);
  assert.equal(toSec('now-1h30m', 10000), 10000 - 5400);
  assert.equal(toSec('1700000000', 0), 1700000000);
  assert.equal(toSec('1700000000000', 0), 1700000000);
  assert.ok(Number.isNaN(toSec('tomorrow', 0)));
  assert.ok(Number.isFinite(toSec('yesterday', 86400 * 3)));
  assert.ok(Number.isNaN(durationSec('5x')));
  assert.equal(fmtDuration(5400), '1h30m');
  assert.equal(stepFor(0, 3600), '30s');
  assert.equal(stepFor(0, 60), '10s');
});

test('autocomplete context', () => {
  assert.deepEqual(completionContext('{en', 3), { kind: 'label', prefix: 'en', start: 1, end: 3 });
  const v = completionContext('{env="pr"}', 8);
  assert.equal(v.kind, 'value');
  assert.equal(v.label, 'env');
  assert.equal(v.prefix, 'pr');
  assert.equal(v.end, 9); // replaces the closing quote too
  assert.equal(completionContext('{a="b",ho', 9).prefix, 'ho');
  assert.equal(completionContext('{a="x,y",', 9).kind, 'label'); // comma inside quotes ignored
  assert.equal(completionContext('{a="b"} x', 9), null);
  assert.equal(completionContext('my', 2).kind, 'name');
});

test('an inlined frame is a frame of its function, as the tables name it', () => {
  // g calls f inlined (f_[i]) and main calls f: one function f
  const t = treeArrays(N('total', 0, 10, [N('main', 0, 10, [N('g', 0, 6, [N('f_[i]', 6, 6)]), N('f', 4, 4)])]));
  const fi = t.names.indexOf('f_[i]');
  assert.equal(fnOf(t, [...t.nameIdx].indexOf(fi)), 'f');
  assert.equal(t.fn[fi], fnId(t, 'f'));
  const s = sandwich(t, 'f');
  assert.equal(s.callees.total, 10); // both frames of f
  // a table that names "f_[i]" itself (folded text ingested as is) keeps the name
  linkFunctions(t, (n) => n === 'f_[i]');
  assert.equal(t.fn[fi], fi);
  // an inlined-only function gets its bare name interned, and its row its colour
  const u = linkFunctions(treeArrays(N('total', 0, 3, [N('g', 0, 3, [N('h_[i]', 3, 3)])])), (n) => n !== 'h_[i]');
  const rows = topRows({ rows: [{ name: 'h', self: 3, total: 3 }] }, u);
  assert.equal(rows[0].first, 2);
});

test('diffSide keeps one side of a diff tree', () => {
  const d = { name: 'total', self: [0, 0], total: [4, 6], children: [
    { name: 'a', module: 'm', self: [4, 1], total: [4, 1] }, { name: 'b', self: [0, 5], total: [0, 5] }] };
  assert.deepEqual(diffSide(d, 0), { name: 'total', module: undefined, self: 0, total: 4,
    children: [{ name: 'a', module: 'm', self: 4, total: 4, children: [] }] });
  assert.deepEqual(diffSide(d, 1).children.map((c) => [c.name, c.total]), [['b', 5], ['a', 1]]);
});

test('halves of a range', () => {
  assert.deepEqual(halves('now-1h', 'now', 0), [['now-1h', 'now-30m'], ['now-30m', 'now']]);
  assert.deepEqual(halves('now-7d', 'now', 0), [['now-7d', 'now-3d12h'], ['now-3d12h', 'now']]);
  assert.deepEqual(halves('1000', '2001', 0), [['1000', '1500'], ['1500', '2001']]);
  assert.equal(halves('now-1h', 'now-2h', 0), null);
  assert.equal(halves('bad', 'now', 0), null);
});

test('markGroups marks the group-by level only at the root', () => {
  const g = N('total', 0, 10, [N('process=xz', 0, 6, [N('main', 0, 6, [N('process=xz', 6, 6)])]),
    N('process=', 0, 3, [N('main', 3, 3)]), N('operator=', 1, 1)]);
  const t = markGroups(treeArrays(g), 'process');
  const marked = [...t.group].map((m, i) => (m ? nameOf(t, i) : null)).filter(Boolean);
  assert.deepEqual(marked, ['process=xz', 'process=']);
  assert.equal(t.color[1], groupColor('process=xz'));
  assert.equal(t.groupBy, 'process');
  assert.equal(markGroups(treeArrays(g), 'process', true).group.reduce((a, b) => a + b, 0), 3);
  assert.equal(markGroups(treeArrays(g), '').group.reduce((a, b) => a + b, 0), 0);
  assert.deepEqual(groupParts('pid=4242'), ['pid', '4242']);
  assert.deepEqual(groupParts('process='), ['process', '']);
});

console.log(failed ? `${failed} failed` : 'all passed');
process.exit(failed ? 1 : 0);
