// A pprof (profile.proto) written by hand for the UI tests' planted data: no
// protobuf library, the few fields hearth's ingest reads. Numbers may be BigInt
// (a task location's address is pid << 32 | tid).
import { gzipSync } from 'node:zlib';

export const varint = (n) => {
  const b = [];
  let v = BigInt(n);
  while (v >= 0x80n) {
    b.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  b.push(Number(v));
  return b;
};
export const fInt = (f, n) => [...varint((f << 3) | 0), ...varint(n)];
export const fBytes = (f, a) => [...varint((f << 3) | 2), ...varint(a.length), ...a];
export const fPacked = (f, ns) => fBytes(f, ns.flatMap(varint));

/**
 * A gzipped pprof of one sample type "samples/count":
 *   mappings  [{id, file, start?, limit?}]
 *   locations [{id, mapping, address, fn}]  (fn: a function name, or null for none)
 *   samples   [{locs: [location ids, leaf first], value, labels: {key: 'string'}}]
 * Function ids are given per distinct name, strings interned in order of use.
 */
export function encodePprof({ mappings = [], locations = [], samples = [] }) {
  const strs = [''];
  const s = (x) => {
    let i = strs.indexOf(x);
    if (i < 0) i = strs.push(x) - 1;
    return i;
  };
  const fns = [];
  const fnId = (name) => (fns.includes(name) ? fns.indexOf(name) : fns.push(name) - 1) + 1;
  const msg = [...fBytes(1, [...fInt(1, s('samples')), ...fInt(2, s('count'))])];
  for (const sm of samples) {
    const labels = Object.entries(sm.labels || {}).flatMap(([k, v]) => fBytes(3, [...fInt(1, s(k)), ...fInt(2, s(v))]));
    msg.push(...fBytes(2, [...fPacked(1, sm.locs), ...fPacked(2, [sm.value]), ...labels]));
  }
  for (const m of mappings) {
    msg.push(...fBytes(3, [...fInt(1, m.id), ...fInt(2, m.start || 0), ...fInt(3, m.limit || 0),
      ...fInt(4, 0), ...fInt(5, s(m.file))]));
  }
  for (const l of locations) {
    const line = l.fn ? fBytes(4, fInt(1, fnId(l.fn))) : [];
    msg.push(...fBytes(4, [...fInt(1, l.id), ...fInt(2, l.mapping || 0), ...fInt(3, l.address), ...line]));
  }
  fns.forEach((name, k) => msg.push(...fBytes(5, [...fInt(1, k + 1), ...fInt(2, s(name)), ...fInt(3, s(name))])));
  const table = strs.slice(); // every string is interned by now
  for (const x of table) msg.push(...fBytes(6, [...Buffer.from(x)]));
  return gzipSync(Buffer.from(msg));
}

/** Gzips an encoded message (what /ingest?format=pprof takes). */
export const gzip = (bytes) => gzipSync(Buffer.from(bytes));
