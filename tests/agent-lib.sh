# tests/agent-lib.sh: sourced by the tests/run-agent-*.sh after tests/lib.sh.
# Starts targets with the agent preloaded, steps them through a fifo on stdin,
# takes snapshots and reads the figures of a known allocation site out of them.

: "${MEMWATCH_AGENT:?run the tests with make check}"
SNAPDUMP=${top_builddir:?}/tests/tools/snapdump
[ -f "$MEMWATCH_AGENT" ] || skip "the agent library $MEMWATCH_AGENT is not built"
[ -x "$SNAPDUMP" ] || skip "tests/tools/snapdump is not built"

# start_agent_target NAME OPTIONS PROGRAM ARGS...: start PROGRAM with the agent
# preloaded (MEMWATCH_AGENT_OPTIONS=OPTIONS), stdin from the fifo NAME.in, output
# in NAME.out; $target_pid. Write lines to it with step NAME.
start_agent_target() {
	local name=$1 opts=$2
	shift 2
	# a stale NAME.out would say "ready" before the new target is
	rm -f "$name.in" "$name.out" "$name.err"
	mkfifo "$name.in" || { fail "mkfifo $name.in"; return 1; }
	LD_PRELOAD=$MEMWATCH_AGENT MEMWATCH_AGENT_OPTIONS=$opts "$@" <"$name.in" >"$name.out" 2>"$name.err" &
	target_pid=$!
	started_pids="$started_pids $target_pid"
	# Holding the fifo open keeps the target's stdin from seeing end of file.
	sleep 3600 >"$name.in" &
	started_pids="$started_pids $!"
	eval "holder_$name=$!"
}

# step NAME: send one line to the target NAME (it goes on to its next phase).
# Bounded: a target that died holds no reader, and opening the fifo would wait
# for one for ever.
step() {
	timeout 10 sh -c 'echo go > "$1"' sh "$1.in" || fail "cannot step $1: the target is not reading"
}

# end_target NAME: close its stdin.
end_target() {
	local h
	eval "h=\${holder_$1:-}"
	if [ -n "$h" ]; then
		kill "$h" 2>/dev/null
		wait "$h" 2>/dev/null
	fi
	return 0
}

# wait_ready NAME N: wait for the target to print "ready N".
wait_ready() {
	wait_until "[ -f '$1.out' ] && grep -q '^ready $2\$' '$1.out'" "${3:-30}"
}

# expect_target_exit PID NAME: the target exits 0 and printed "ok".
expect_target_exit() {
	local pid=$1 name=$2 st
	wait "$pid"
	st=$?
	end_target "$name"
	[ "$st" -eq 0 ] || { fail "target $name exited with status $st"; sed 's/^/  | /' "$name.out" "$name.err" >&2; }
	expect_grep '^ok' "$name.out"
}

# take_snap PID FILE: memwatch snap -p PID -o FILE must succeed.
take_snap() {
	run_mw 0 snap -p "$1" -o "$2" -f
	[ -s "$2" ] || fail "no snapshot written to $2"
}

# site FIELD SNAP BINARY FUNCTION [KIND]: the sum of FIELD (live_bytes, live_blocks,
# live_samples, alloc_bytes, alloc_blocks) over the stacks of SNAP that have a
# frame inside FUNCTION of BINARY (an executable or a library, matched by file
# name among the snapshot's modules); with KIND (malloc, mmap, brk or file)
# only the stacks of that kind. An empty FUNCTION (and BINARY) sums every stack. Called in $(...): a failure prints
# "error" (no number compares equal to it) and is counted by finish.
site() {
	local field=$1 snap=$2 bin=$3 fn=$4 kind=${5:-all} range="0 0" lo size
	[ -z "$fn" ] || range=$(nm -S --defined-only "$bin" | awk -v f="$fn" '$4 == f { print $1, $2; exit }')
	if [ -z "$range" ]; then
		fail "no function $fn in $bin"
		echo error
		return
	fi
	lo=$(printf '%d' "0x${range% *}")
	size=$(printf '%d' "0x${range#* }")
	if ! "$SNAPDUMP" "$snap" >"$snap.txt" 2>"$snap.err"; then
		fail "snapdump $snap: $(cat "$snap.err")"
		echo error
		return
	fi
	awk -v base="${bin##*/}" -v lo="$lo" -v hi="$((lo + size))" -v field="$field" -v kind="$kind" -v fn="$fn" '
	function hex(s,   i, v) {
		s = tolower(s); sub(/^0x/, "", s); v = 0
		for (i = 1; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	function kindof(f) {
		if (int(f / 2) % 2 == 0) return "malloc"
		if (int(f / 4) % 2 == 1) return "brk"
		if (int(f / 8) % 2 == 1) return "file"
		return "mmap"
	}
	function flush() { if (instack && (hit || fn == "")) sum += val; instack = 0 }
	BEGIN { mod = -1; sum = 0 }
	/^module / {
		if (match($0, /path="[^"]*"/)) {
			p = substr($0, RSTART + 6, RLENGTH - 7); n = split(p, parts, "/")
			if (parts[n] == base) mod = $2
		}
	}
	/^stack / {
		flush(); val = 0; hit = 0; instack = 1
		for (i = 3; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == field) val = kv[2]
			if (kv[1] == "flags" && kind != "all" && kindof(hex(kv[2])) != kind)
				instack = 0
		}
	}
	/^  [0-9]+:0x/ {
		split($1, fr, ":")
		if (fr[1] == mod) { o = hex(fr[2]); if (o >= lo && o < hi) hit = 1 }
	}
	END { flush(); printf "%.0f\n", sum }' "$snap.txt"
}

# expect_eq WHAT GOT WANT
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got $2, expected $3"
}

# expect_within WHAT GOT WANT PERCENT: |GOT - WANT| <= PERCENT% of WANT.
expect_within() {
	awk -v g="$2" -v w="$3" -v p="$4" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= w * p / 100) }' ||
		fail "$1: got $2, expected $3 within $4%"
}

# snap_field SNAP NAME: a top-level figure of the snapshot (snapdump's NAME line).
snap_field() {
	"$SNAPDUMP" "$1" | awk -v n="$2" '$1 == n { print $2; exit }'
}
