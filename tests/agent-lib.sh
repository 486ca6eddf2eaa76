# tests/agent-lib.sh: sourced by the tests/run-agent-*.sh after tests/lib.sh.
# Starts targets with the agent preloaded (stepped through a fifo on stdin, as
# lib.sh's start_fifo_target), takes snapshots and reads the figures of a known
# allocation site out of them.

: "${MEMWATCH_AGENT:?run the tests with make check}"
[ -f "$MEMWATCH_AGENT" ] || skip "the agent library $MEMWATCH_AGENT is not built"
need_snapdump

# start_agent_target NAME OPTIONS PROGRAM ARGS...: start_fifo_target (lib.sh)
# with the agent preloaded (MEMWATCH_AGENT_OPTIONS=OPTIONS); $target_pid.
start_agent_target() {
	local name=$1 opts=$2
	shift 2
	start_fifo_target "$name" exec_with_agent "$opts" "$@"
}
# start_agent_after LIBRARY NAME OPTIONS PROGRAM ARGS...: start_agent_target
# with LIBRARY (another allocator) preloaded before the agent.
start_agent_after() {
	local saved=$MEMWATCH_AGENT
	MEMWATCH_AGENT="$1 $MEMWATCH_AGENT"
	shift
	start_agent_target "$@"
	MEMWATCH_AGENT=$saved
}
# exec_with_agent OPTIONS PROGRAM ARGS...: in the background shell that
# start_fifo_target forks, become PROGRAM with the agent preloaded (not through
# env(1), which would load the agent into env first).
exec_with_agent() {
	export MEMWATCH_AGENT_OPTIONS="$1"
	export LD_PRELOAD="$MEMWATCH_AGENT"
	shift
	exec "$@"
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
