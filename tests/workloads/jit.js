// Node.js JIT workload: run with --perf-basic-prof so V8 writes /tmp/perf-PID.map;
// the CPU goes to hearthHotJs, which only the perf map can name.
// Usage: node --perf-basic-prof jit.js SECONDS — prints its pid, spins.
'use strict';
function hearthHotJs(n) {
	let x = 0;
	for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
	return x;
}
console.log(process.pid);
const end = Date.now() + 1000 * Number(process.argv[2] || 10);
let sink = 0;
while (Date.now() < end) sink += hearthHotJs(1e6);
if (sink === -1) console.log(sink);
