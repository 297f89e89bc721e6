// Known shape for the V8 walk (tests/integration/test_node_walk.sh):
// main -> outerLoop -> hotAlpha / hotBeta, about 2:1 of the CPU time. Each call of
// a hot function is timed with process.cpuUsage() (thread CPU of the only busy
// thread), so the program states its own split: at exit (after SECONDS) it prints
// "counters alpha_us=A beta_us=B" on stdout. The loop is synchronous: the stack is
// always (top level) -> main -> outerLoop -> hot function.
'use strict';
const secs = Number(process.argv[2] || 10);
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
		let t = cpuUs();
		sink += hotAlpha(400000);
		const m = cpuUs();
		sink += hotBeta(200000);
		const e = cpuUs();
		alphaUs += m - t;
		betaUs += e - m;
	}
}

function report() {
	console.log(`counters alpha_us=${alphaUs} beta_us=${betaUs} sink=${sink % 7}`);
	process.exit(0);
}

function main() {
	const end = Date.now() + secs * 1000;
	while (Date.now() < end) outerLoop(5);
	report();
}

main();
