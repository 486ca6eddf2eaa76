// js_grow.js MODE [ARGS]: the node targets of tests/run-node-*.sh. Each says
// "ready ..." when it is set up; a line on stdin ends it with "ok ..." and
// exit status 0 (but for the modes that end by themselves).
//   map SECONDS     retainObjects() keeps small objects in a Map, ~20 MiB/s
//   buffer          growBuffers() keeps 300 Buffers of 1 MiB (and retainObjects()
//                   some 10 MiB of objects beside them), then "ready 1"
//   serve           an HTTP server on a loopback port ("ready PORT"); GET /delay
//                   answers the event loop's largest delay (ms) since the last
//                   GET /delay; logRequest() keeps a record of every other one
//   client PORT N   N requests to that server, 4 at a time; "ok N" if all were
//                   answered 200
//   end SECONDS     grows for that long, then lets its event loop run dry
//   exit SECONDS    grows for that long, then calls process.exit(0)
//   worker          a worker thread whose workerObjects() keeps small objects
//                   in an array, ~20 MiB/s up to ~300 MiB, says "ready PID" (through the main
//                   thread, which runs no JavaScript of its own meanwhile); a
//                   line on stdin terminates it and starts another, "ready 2"
//   workers         a worker thread (workerObjects() up to ~1 MiB) made while
//                   the main thread is at nice 19, so that its start-up runs
//                   at nice 19 (it goes back to nice 0 at its first
//                   JavaScript), says "ready 1"; each line on stdin starts one
//                   more ("ready N"), the end of stdin ends it with "ok"
//   block           grows all along; a line on stdin has its JavaScript thread
//                   wait in native code (execSync of a shell, which says
//                   "blocking") until a file "unblock" appears in its
//                   directory (at most 60 s), then "ready 2"; another line
//                   ends it
"use strict";
const mode = process.argv[2];
const keep = new Map();
let n = 0;

function retainObjects() {
	for (let k = 0; k < 4000; k++, n++)
		keep.set(n, { id: n, name: "item-" + n, tags: [n, n + 1] });
}

function growBuffers(list) {
	list.push(Buffer.alloc(1 << 20, 1));
}

function workerObjects(list) {
	// (at most 3 million, some 300 MiB: under a worker's heap limit)
	for (let k = 0; k < 4000 && list.length < 3000000; k++)
		list.push({ id: k, name: "worker-" + k, at: [k, list.length] });
}

const served = [];
function logRequest(req) {
	served.push({ url: req.url, at: Date.now(), agent: "" + req.headers["user-agent"] + served.length });
}

function onStdin(f) {
	process.stdin.on("data", f);
}

if (mode === "map") {
	const t = setInterval(retainObjects, 20);
	setTimeout(() => { clearInterval(t); console.log("done " + keep.size); }, 1000 * Number(process.argv[3] || 10));
	console.log("ready " + process.pid);
	onStdin(() => { console.log("ok " + keep.size); process.exit(0); });
} else if (mode === "buffer") {
	const list = [];
	console.log("ready 0 " + process.pid);
	let stage = 0;
	onStdin(() => {
		if (++stage > 1) {
			console.log("ok " + list.length);
			process.exit(0);
		}
		const t = setInterval(() => {
			growBuffers(list);
			// (JavaScript objects too, some 10 MiB: V8's profile has
			// live samples in every snapshot, beside the perf map's names)
			if (list.length % 10 === 0)
				retainObjects();
			if (list.length === 300) {
				clearInterval(t);
				console.log("ready 1");
			}
		}, 5);
	});
} else if (mode === "serve") {
	const http = require("http");
	const { monitorEventLoopDelay } = require("perf_hooks");
	const h = monitorEventLoopDelay({ resolution: 10 });
	h.enable();
	const srv = http.createServer((req, res) => {
		if (req.url === "/delay") {
			const ms = Math.round(h.max / 1e6);
			h.reset();
			res.end(String(ms) + "\n");
			return;
		}
		logRequest(req);
		const body = JSON.stringify({ at: Date.now(), pad: "x".repeat(512) });
		res.setHeader("Content-Type", "application/json");
		res.end(body);
	});
	srv.listen(0, "127.0.0.1", () => console.log("ready " + srv.address().port + " " + process.pid));
	onStdin(() => { console.log("ok"); process.exit(0); });
} else if (mode === "client") {
	const http = require("http");
	const port = Number(process.argv[3]), total = Number(process.argv[4]);
	const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
	let sent = 0, good = 0, done = 0;
	function one() {
		if (sent >= total)
			return;
		sent++;
		http.get({ host: "127.0.0.1", port, path: "/", agent }, (res) => {
			res.resume();
			res.on("end", () => {
				if (res.statusCode === 200)
					good++;
				finished();
			});
		}).on("error", finished);
	}
	function finished() {
		done++;
		if (done === total) {
			console.log((good === total ? "ok " : "failed ") + good);
			agent.destroy();
			return;
		}
		one();
	}
	for (let i = 0; i < 4; i++)
		one();
} else if (mode === "end" || mode === "exit") {
	const t = setInterval(retainObjects, 5);
	console.log("ready " + process.pid);
	setTimeout(() => {
		clearInterval(t);
		console.log("ok " + keep.size);
		if (mode === "exit")
			process.exit(0);
		process.stdin.destroy();
	}, 1000 * Number(process.argv[3] || 3));
	onStdin(() => {});
} else if (mode === "block") {
	const child_process = require("child_process");
	setInterval(retainObjects, 20);
	console.log("ready " + process.pid);
	let stage = 0;
	onStdin(() => {
		if (++stage > 1) {
			console.log("ok " + keep.size);
			process.exit(0);
		}
		// the shell says "blocking" once node is in execSync's native code
		child_process.execSync(
			"echo blocking; i=0; while [ ! -e unblock ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done",
			{ stdio: ["ignore", "inherit", "inherit"] });
		console.log("ready 2");
	});
} else if (mode === "worker") {
	const { Worker } = require("worker_threads");
	let stage = 0, w;
	function start(said) {
		w = new Worker(__filename, { argv: ["worker-child"] });
		w.on("message", () => console.log(said));
		w.on("exit", (c) => console.log("worker exit " + c));
	}
	start("ready " + process.pid);
	onStdin(() => {
		if (++stage > 1) {
			console.log("ok");
			process.exit(0);
		}
		w.terminate().then(() => start("ready 2"));
	});
} else if (mode === "workers") {
	const os = require("os");
	const { Worker } = require("worker_threads");
	const ws = [];
	function start() {
		os.setPriority(19);
		const w = new Worker(__filename, { argv: ["small-child"] });
		os.setPriority(0);
		w.on("message", () => console.log("ready " + ws.length));
		ws.push(w);
	}
	start();
	onStdin(start);
	process.stdin.on("end", () => { console.log("ok"); process.exit(0); });
} else if (mode === "small-child") {
	const { parentPort } = require("worker_threads");
	require("os").setPriority(0);
	const kept = [];
	setInterval(() => { if (kept.length < 10000) workerObjects(kept); }, 100);
	parentPort.postMessage("ready");
} else if (mode === "worker-child") {
	const { parentPort } = require("worker_threads");
	const kept = [];
	setInterval(workerObjects, 20, kept);
	parentPort.postMessage("ready");
} else {
	console.error("js_grow.js: unknown mode " + mode);
	process.exit(2);
}
