#!/bin/sh
# run-agent-node.sh: Debian's own node, a non-PIE program bound at load time
# that takes the address of malloc: the Buffers a script keeps are sampled
# once memwatch -p has attached, and under memwatch run.
. "$top_srcdir/tests/lib.sh"

NODE=/usr/bin/node
SNAPDUMP=$top_builddir/tests/tools/snapdump
[ -x "$NODE" ] || skip "$NODE is not installed (Debian package nodejs)"
[ -x "$SNAPDUMP" ] || skip "tests/tools/snapdump is not built"
MIB=1048576

# live_total SNAP: the estimated live bytes of the malloc stacks of SNAP (not
# those of V8's own mmaps, flag bit 1, which reserve far more than they use).
live_total() {
	if ! "$SNAPDUMP" "$1" >"$1.txt" 2>"$1.err"; then
		fail "snapdump $1: $(cat "$1.err")"
		echo 0
		return
	fi
	awk '/^stack / { b = 0; m = 0
		for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "live_bytes") b = kv[2]
			if (kv[1] == "flags") m = index("2367abef", substr(kv[2], length(kv[2]), 1)) > 0 }
		if (!m) t += b }
	     END { printf "%.0f\n", t }' "$1.txt"
}

# expect_range WHAT GOT LO HI
expect_range() {
	[ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || fail "$1: got $2, expected $3..$4"
}

# go NAME: a line to the script, bounded (a dead script leaves no reader).
go() {
	timeout 10 sh -c 'echo go >"$1"' go "$1.in" || fail "cannot step $1 (did it die?)"
}

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

# memwatch -p: attached once the growth passes the trigger; the last snapshot
# holds what was kept after that (about 300 - 32 MiB).
mkfifo p.in
sleep 3600 >p.in &
holder=$!
started_pids="$started_pids $holder"
"$NODE" grow.js <p.in >p.out 2>p.err &
pid=$!
started_pids="$started_pids $pid"
if wait_until "grep -q '^ready 0 ' p.out" 30; then
	"$MEMWATCH" -p "$pid" -i 200ms -t +32MiB -d 15s -q -o p.log >w.out 2>w.err &
	mw=$!
	started_pids="$started_pids $mw"
	wait_until "grep -q '^# event .* start' p.log 2>/dev/null" 30 && go p &&
		wait_until "grep -q '^ready 1' p.out" 30
	wait "$mw"
	st=$?
	[ "$st" -eq 0 ] || { fail "memwatch -p $pid: status $st"; sed 's/^/  | /' w.err >&2; }
	expect_grep "^# event .* $pid capture-start" p.log
	last=$(ls p."$pid".*-final.snap 2>/dev/null | head -n 1)
	if [ -n "$last" ]; then
		expect_range "live bytes sampled after memwatch -p attached" \
			"$(live_total "$last")" $((150 * MIB)) $((400 * MIB))
	else
		fail "memwatch -p wrote no final snapshot"
		sed 's/^/  | /' p.log w.err >&2
	fi
	go p
fi
kill "$holder" 2>/dev/null
wait "$pid"
st=$?
[ "$st" -eq 0 ] || { fail "node grow.js: status $st"; sed 's/^/  | /' p.err >&2; }
expect_grep '^ok 300$' p.out

# memwatch run: capture from the start, so nearly all 300 MiB are sampled.
mkfifo r.in
sleep 3600 >r.in &
holder=$!
started_pids="$started_pids $holder"
timeout -k 5 60 "$MEMWATCH" run -q -- "$NODE" grow.js <r.in >r.out 2>r.err &
mw=$!
started_pids="$started_pids $mw"
if wait_until "grep -q '^ready 0 ' r.out" 30; then
	pid=$(awk '$1 == "ready" && $2 == 0 { print $3 }' r.out)
	if go r && wait_until "grep -q '^ready 1' r.out" 30; then
		"$MEMWATCH" snap -p "$pid" -w 0 -o r.snap >snap.out 2>snap.err ||
			{ fail "memwatch snap -p $pid: status $?"; sed 's/^/  | /' snap.err >&2; }
		[ -s r.snap ] && expect_range "live bytes sampled under memwatch run" \
			"$(live_total r.snap)" $((240 * MIB)) $((400 * MIB))
	fi
	go r
fi
kill "$holder" 2>/dev/null
wait "$mw"
st=$?
[ "$st" -eq 0 ] || { fail "memwatch run -- node grow.js: status $st"; sed 's/^/  | /' r.err >&2; }
expect_grep '^ok 300$' r.out
finish
