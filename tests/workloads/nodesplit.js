// Known shape for the V8 walk (tests/integration/test_node_walk.sh):
// (top level) -> main -> outerLoop -> hotAlpha / hotBeta, about 2:1 of the CPU
// time. Each call of a hot function is timed with process.cpuUsage(), so the
// program states its own split: it prints "ready", then every 100 ms a line
// "cpu ALPHA_US BETA_US" of cumulative times, until it has spent SECONDS of CPU
// time in them (as many samples on a busy machine as on an idle one). The loop is
// synchronous: the stack is always the same four JS frames.
// Usage: node nodesplit.js SECONDS [TITLE]
'use strict';
const secs = Number(process.argv[2] || 10);
if (process.argv[3]) process.title = process.argv[3];
let sink = 0;
let alphaUs = 0;
let betaUs = 0;

function hotAlpha(n) {
	let s = 0;
	for (let i = 0; i < n; i++) s = (s + i * i) % 1000003;
	return s;
}

function hotBeta(n) {
	let s = 1;
	for (let i = 0; i < n; i++) s = (s * 31 + i) % 998244353;
	return s;
}

function cpuUs() {
	const u = process.cpuUsage();
	return u.user + u.system;
}

function outerLoop(rounds) {
	for (let r = 0; r < rounds; r++) {
		const t = cpuUs();
		sink += hotAlpha(200000);
		const m = cpuUs();
		sink += hotBeta(100000);
		const e = cpuUs();
		alphaUs += m - t;
		betaUs += e - m;
	}
}

function main() {
	let next = 0;
	console.log('ready');
	while (alphaUs + betaUs < secs * 1e6) {
		outerLoop(2);
		if (Date.now() >= next) {
			console.log(`cpu ${alphaUs} ${betaUs} ${sink % 7}`);
			next = Date.now() + 100;
		}
	}
	console.log(`cpu ${alphaUs} ${betaUs} ${sink % 7}`);
}

main();
