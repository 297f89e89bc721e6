// Node.js JIT workload with a known JS call chain, for mixed-mode unwinding:
// the top level calls hearthJsCaller, which calls hearthJsHot, where the CPU goes.
// Run with --perf-basic-prof (V8 writes /tmp/perf-PID.map) and --no-turbo-inlining
// (else TurboFan folds the callee into its caller and the chain has one JS frame).
// Usage: node --perf-basic-prof --no-turbo-inlining jitchain.js SECONDS
'use strict';
function hearthJsHot(n) {
	let x = 0;
	for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
	return x;
}
function hearthJsCaller(n) {
	return hearthJsHot(n) + hearthJsHot(n >> 1);
}
console.log(process.pid);
const end = Date.now() + 1000 * Number(process.argv[2] || 10);
let sink = 0;
while (Date.now() < end) sink += hearthJsCaller(1e6);
if (sink === -1) console.log(sink);
