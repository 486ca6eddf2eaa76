#!/bin/sh
# run-agent-node.sh: Debian's own node, a non-PIE program bound at load time
# that takes the address of malloc: the Buffers a script keeps are sampled
# once memwatch -p has attached, and under memwatch run.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"

NODE=/usr/bin/node
[ -x "$NODE" ] || skip "$NODE is not installed (Debian package nodejs)"
need_snapdump

# The script keeps 300 Buffers of 1 MiB each (filled, so they are resident and
# the growth shows in RSS), announced by "ready 1"; a second line ends it.
cat >grow.js <<'JSEOF'
const keep = [];
let stage = 0;
console.log("ready 0 " + process.pid);
process.stdin.on("data", () => {
	if (++stage > 1) {
		console.log("ok " + keep.length);
		process.exit(0);
	}
	const t = setInterval(() => {
		keep.push(Buffer.alloc(1 << 20, 1));
		if (keep.length === 300) {
			clearInterval(t);
			console.log("ready 1");
		}
	}, 5);
});
JSEOF

# Only the malloc stacks count: V8's own mmaps reserve far more than they use.
grow_attached "$NODE" grow.js 400 malloc
grow_under_run "$NODE" grow.js 400 malloc
finish
