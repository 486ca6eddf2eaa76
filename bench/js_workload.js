// js_workload.js: an allocation-heavy JavaScript workload for
// bench/node-overhead.sh. ROUNDS: every round builds many small objects
// (records with strings and arrays) into a Map, keeps a tenth of them for a
// while and drops the rest, so that V8's young generation fills and is
// scavenged all the time. Prints "ready", waits for a line on stdin, runs the
// rounds and prints their wall and CPU time (CPU of the whole process, every
// thread included) as "wall_s=W cpu_s=C".
"use strict";
const rounds = Number(process.argv[2] || 40);

function build(n, tag) {
	const m = new Map();
	for (let i = 0; i < n; i++)
		m.set(i, { id: i, name: tag + "-" + i, pair: [i, i * 2] });
	return m;
}

function work() {
	const kept = [];
	let sink = 0;
	for (let r = 0; r < rounds; r++) {
		const m = build(100000, "round" + r);
		const some = [];
		for (const [k, v] of m)
			if (k % 10 === 0)
				some.push(v);
		kept.push(some);
		if (kept.length > 8)
			kept.shift();
		sink += m.size;
	}
	return sink;
}

// while it waits, JavaScript runs now and then: V8's profiler starts there
const tick = setInterval(() => {}, 20);
console.log("ready");
process.stdin.once("data", () => {
	clearInterval(tick);
	const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
	work();
	const c = process.cpuUsage(c0);
	const wall = Number(process.hrtime.bigint() - t0) / 1e9;
	console.log("wall_s=" + wall.toFixed(3) + " cpu_s=" + ((c.user + c.system) / 1e6).toFixed(3));
	process.exit(0);
});
