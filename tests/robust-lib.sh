# tests/robust-lib.sh: helpers of the failure-matrix tests (tests/run-robust-*.sh),
# sourced after tests/lib.sh.

snapdump=$top_builddir/tests/tools/snapdump
robust=$TARGETS/robust_target

# no_temp_files WHAT: no outfile temporary (NAME.tmp.XXXXXX) is left in the
# test directory or below it.
no_temp_files() {
	local left
	left=$(find . -name '*.tmp.*' 2>/dev/null)
	[ -z "$left" ] || fail "$1: temporary files left: $left"
}

# snaps_complete WHAT FILES...: every snapshot file given decodes whole
# (snapdump checks the layout and the CRC over every byte).
snaps_complete() {
	local what=$1 f
	shift
	for f in "$@"; do
		[ -e "$f" ] || continue
		"$snapdump" "$f" >/dev/null 2>snapdump.err ||
			fail "$what: '$f' is not a complete snapshot: $(cat snapdump.err)"
	done
}

# log_lines_whole WHAT LOG: every line of the run log but the last is a
# comment, the column header or a sample of 13 fields; with ENDED=1 (the
# default) the last one too, ending with a newline.
log_lines_whole() {
	local what=$1 log=$2 n bad
	n=$(grep -c '' "$log")
	bad=$(head -n $((n - 1)) "$log" |
		grep -Ev '^# |^time_s |^[0-9]+\.[0-9]{3} [0-9a-z]+( ([0-9]+|-)){11}$' | head -n 3)
	[ -z "$bad" ] || fail "$what: '$log' has broken lines: $bad"
}

# log_ended WHAT LOG: the log's last line is the end event, complete.
log_ended() {
	tail -n 1 "$2" | grep -Eq '^# event [0-9.]+ - end reason=[a-z]+$' ||
		fail "$1: '$2' does not end with the end event: $(tail -n 1 "$2")"
	[ "$(tail -c 1 "$2" | od -An -c | tr -d ' ')" = '\n' ] || fail "$1: '$2' ends in a half line"
}

# capture_off WHAT PID: the agent in PID answers and is not capturing (its
# hooks removed): memwatch snap --wait 0 (which starts no capture of its own)
# says so. Polls up to 15 s, since an agent that lost its owner notices it on
# its own.
capture_off() {
	local i=0
	while :; do
		"$MEMWATCH" snap --wait 0 -p "$2" -f -o capture-check.snap >capture-check.out 2>capture-check.err
		if [ $? -eq 0 ] && grep -q 'capture is off' capture-check.out; then
			return 0
		fi
		i=$((i + 1))
		if [ "$i" -ge 30 ]; then
			fail "$1: pid $2 still captures (or does not answer): $(cat capture-check.out capture-check.err)"
			return 0
		fi
		sleep 0.5
	done
}

# throughput FILE FROM: the median of the "ops_per_s" lines of FILE from line
# FROM on (robust_target churn's reports), or 0.
throughput() {
	tail -n +"$2" "$1" | awk '/^ops_per_s /{ v[n++] = $2 } END {
		if (n == 0) { print 0; exit }
		for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		print v[int(n / 2)] }'
}

# throughput_kept WHAT FILE BEFORE_FROM AFTER_FROM: the target's throughput
# after memwatch left is not far below what it was before memwatch came
# (loose: the machine is shared and noisy; hooks left in place would not fail
# this, capture_off checks that).
throughput_kept() {
	local before after
	before=$(throughput "$2" "$3")
	after=$(throughput "$2" "$4")
	awk -v b="$before" -v a="$after" 'BEGIN { exit !(b > 0 && a >= 0.3 * b) }' ||
		fail "$1: the target's throughput fell from $before to $after ops/s"
}

# target_free WHAT PID FILE: PID is neither traced nor stopped (memwatch let go
# of it), and still makes progress: FILE, its output, grows.
target_free() {
	local i=0 n
	while grep -Eq '^TracerPid:[[:space:]]*[1-9]|^State:[[:space:]]*[tT]' "/proc/$2/status" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -gt 40 ] && { fail "$1: pid $2 left traced or stopped: $(grep -E '^(State|TracerPid)' "/proc/$2/status" | tr '\n' ' ')"; return 0; }
		sleep 0.05
	done
	kill -0 "$2" 2>/dev/null || { fail "$1: pid $2 is gone"; return 0; }
	n=$(grep -c '' "$3")
	wait_until "[ \$(grep -c '' $3) -gt $n ]" 10
}

# start_robust OUT LINES PATTERN ARGS...: robust_target ARGS in the
# background, its output in OUT, until it has printed LINES lines matching
# PATTERN; $t.
start_robust() {
	local out=$1 lines=$2 pattern=$3
	shift 3
	# emptied here, not only by the child's redirection: the wait below must
	# not read what an earlier target wrote to OUT
	: >"$out"
	"$robust" "$@" >"$out" &
	t=$!
	started_pids="$started_pids $t"
	wait_until "[ \$(grep -c '$pattern' '$out') -ge $lines ]" 20
}

# exec_now PID PROGRAM: return as soon as the background child PID runs
# PROGRAM (checked without wait_until's 50 ms naps, so that a delay counted
# from here is the delay after the exec); fails after 5000 looks (some
# seconds).
exec_now() {
	local i=0
	while [ "$(readlink "/proc/$1/exe" 2>/dev/null)" != "$2" ]; do
		i=$((i + 1))
		if [ "$i" -gt 5000 ]; then
			fail "pid $1 did not start $2"
			return 1
		fi
		ended "$1" && return 0
		sleep 0.001
	done
}

# start_churn OUT LINES ARGS...: start_robust for churn ARGS, until LINES
# throughput lines.
start_churn() {
	local out=$1 lines=$2
	shift 2
	start_robust "$out" "$lines" ops_per_s churn "$@"
}
