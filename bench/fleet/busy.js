// bench/fleet: Node.js busy in JIT-compiled JavaScript and in the runtime (JSON, regexps).
function fib(k) { return k < 2 ? k : fib(k - 1) + fib(k - 2); }
let s = 0;
function round() {
  const t0 = Date.now();
  while (Date.now() - t0 < 50) {
    s += fib(20);
    const o = JSON.parse(JSON.stringify({ a: s, b: [1, 2, 3], c: 'x'.repeat(64) }));
    s += /x+/.exec(o.c)[0].length;
  }
  setImmediate(round);
}
round();
