# tests/py-lib.sh: sourced after tests/lib.sh by the tests that watch an
# interpreter (tests/run-python-*.sh, tests/run-agent-python.sh,
# tests/run-agent-node.sh): start a script, step it through a fifo, take its
# snapshots and check them. Every check calls fail in the caller's shell; the
# figures come back in variables ($live, $pct), never through $(...).

MIB=1048576
script=${top_srcdir:?}/tests/targets/py_grow.py
CTL=${top_builddir:?}/tests/tools/agentctl
# the lines of py_grow.py's allocating statements
small_line=$(grep -n 'kept.append((i, "item-' "$script" | cut -d: -f1)
bytes_line=$(grep -n 'kept.append(bytes(' "$script" | cut -d: -f1)
after_line=$(grep -n 'kept.append((i, "after-' "$script" | cut -d: -f1)

# need_py311: Debian's python3, CPython 3.11 (the CPython every Debian 12 machine has), as $py.
need_py311() {
	py=/usr/bin/python3
	[ -x "$py" ] || skip "$py is not installed (sh tests/install-deps.sh --tests)"
	"$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
		skip "$py is not CPython 3.11, the version the agent reads"
}

# live_total SNAP [malloc]: $live, the estimated live bytes of all the stacks
# of SNAP; with malloc only those of the malloc kind (not the mmaps a runtime
# makes itself, such as V8's, which reserve far more than they use). Returns 1
# after failing if SNAP cannot be read.
live_total() {
	live=
	if ! "$SNAPDUMP" "$1" >"$1.txt" 2>"$1.err"; then
		fail "snapdump $1: $(cat "$1.err")"
		return 1
	fi
	live=$(awk -v kind="${2:-all}" '/^stack / { b = 0; m = 0
		for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "live_bytes") b = kv[2]
			if (kv[1] == "flags") m = index("2367abef", substr(kv[2], length(kv[2]), 1)) > 0 }
		if (kind == "all" || !m) t += b }
	     END { printf "%.0f\n", t }' "$1.txt")
}

# python_state PID STATE: wait until the agent's status says python=STATE.
python_state() {
	wait_until "'$CTL' $1 status >st.out 2>&1 && grep -q ' python=$2\$' st.out" 20 ||
		sed 's/^/  status: /' st.out >&2
}

# start_ctl OUT PID REQUESTS...: agentctl PID REQUESTS in the background, its
# output in OUT; $ctl.
start_ctl() {
	local out=$1
	shift
	"$CTL" "$@" >"$out" 2>&1 &
	ctl=$!
	started_pids="$started_pids $ctl"
}

# expect_shows SNAP FUNCTION LINE: memwatch show SNAP names FUNCTION at
# py_grow.py:LINE (an extended regular expression).
expect_shows() {
	run_mw 0 show "$1"
	expect_grep "  $2  .*py_grow\.py:$3" out
}

# start_script NAME PROGRAM ARGS...: start_fifo_target (lib.sh), until it says
# "ready"; $t. Returns 1 after failing if it never does.
start_script() {
	start_fifo_target "$@"
	t=$target_pid
	wait_until "[ -f $1.out ] && grep -q '^ready' $1.out" 30
}

# snap_stopfile NAME PYTHON SCRIPT: SCRIPT run by PYTHON with the argument
# "stop" (a file whose existence ends it; it prints "ready", then "ok N" at
# its end), attached by memwatch snap at the default rate for 3 s into
# NAME.snap, then stopped: it must end with status 0 and ok, with no Python
# error. Returns 1 after failing if it never said ready.
snap_stopfile() {
	local name=$1 py=$2 script=$3 t
	rm -f stop
	"$py" "$script" stop >"$name.out" 2>"$name.err" &
	t=$!
	started_pids="$started_pids $t"
	if ! wait_until "grep -q ready $name.out 2>/dev/null" 30; then
		fail "$name: the script never said ready"
		sed 's/^/  | /' "$name.err" >&2
		return 1
	fi
	run_mw 0 snap -p "$t" -w 3s -o "$name.snap"
	touch stop
	wait_exit "$t" 30
	[ "$status" -eq 0 ] || fail "$name: the script exited with status $status"
	expect_grep '^ok [0-9]+$' "$name.out"
	expect_no_grep 'Fatal Python error|Segmentation|Traceback' "$name.err"
	return 0
}

# finished NAME PID: the script exits 0 having printed ok, with no Python
# error and no crash on its stderr.
finished() {
	expect_target_exit "$2" "$1"
	expect_no_grep 'Fatal Python error|Segmentation|Traceback' "$1.err"
}

# watch_script NAME PYTHON MODE [OPTIONS...]: py_grow.py MODE (it grows ~30-45
# MiB/s for 12 s, up to ~200 MiB; under PYTHONMALLOC=$pymalloc where that is
# set) watched by memwatch -p until 8 s with a +32 MiB trigger and OPTIONS. The
# report is in NAME.report, the run log in NAME.log; $alive says whether the
# script was left running free (not stopped, not traced) when memwatch was
# done, or had ended on its own by then: a loaded machine may take longer
# than the script's 12 s to write the report after the last snapshot.
# memwatch exits 0, the trigger fires, the script ends with ok (status 0).
pymalloc=
watch_script() {
	local name=$1 python=$2 mode=$3 st
	shift 3
	alive=
	if [ -n "$pymalloc" ]; then
		PYTHONMALLOC=$pymalloc "$python" "$script" "$mode" 12 >"$name.out" 2>"$name.err" &
	else
		"$python" "$script" "$mode" 12 >"$name.out" 2>"$name.err" &
	fi
	t=$!
	started_pids="$started_pids $t"
	wait_until "grep -q ready $name.out 2>/dev/null" 30 || return 0
	run_mw 0 -p "$t" -i 200ms -d 8s -q --trigger +32MiB -o "$name.log" "$@"
	cp out "$name.report"
	expect_grep "^# event [0-9.]+ $t capture-start " "$name.log"
	grep -Eq '^TracerPid:[[:space:]]*[1-9]|^State:[[:space:]]*[tT]' "/proc/$t/status" 2>/dev/null ||
		alive=yes
	# (one left stopped is said by the caller, and let go, to be waited for)
	[ "$alive" = yes ] || kill -CONT "$t" 2>/dev/null
	wait "$t"
	st=$?
	[ "$st" -eq 0 ] || { fail "$name: python exited with status $st"; sed 's/^/  | /' "$name.err" >&2; }
	expect_grep '^ok$' "$name.out"
}

# expect_top_row WHAT REPORT FUNCTION LINE: the first row of REPORT's growth
# table names FUNCTION at py_grow.py:LINE.
expect_top_row() {
	local row
	row=$(grep -E '^ +1 +\+' "$2")
	case $row in
	*"  $3  "*"py_grow.py:$4 "* | *"  $3  "*"py_grow.py:$4") ;;
	*) fail "$1: the top row does not name $3 at py_grow.py:$4: $row" ;;
	esac
}

# expect_explained WHAT REPORT LO [HI]: $pct, the share of the RSS growth that
# REPORT says the sampled stacks explain, lies in LO..HI %.
expect_explained() {
	local want=">= $3"
	[ -z "${4:-}" ] || want="$3..$4"
	pct=$(sed -n 's/^  sampled stacks explain \([0-9]*\) % of the RSS growth.*/\1/p' "$2")
	echo "$1: the sampled stacks explain ${pct:-no} % of the RSS growth"
	case $pct in
	'' | *[!0-9]*) ;;
	*) [ "$pct" -ge "$3" ] && [ "$pct" -le "${4:-100000}" ] && return 0 ;;
	esac
	fail "$1: the sampled stacks explain '${pct:-no}' % of the RSS growth, expected $want"
	sed 's/^/  | /' "$2" >&2
}

# The grow scripts of run-agent-python.sh and run-agent-node.sh: started, they
# print "ready 0 PID"; at a line they keep 300 objects of 1 MiB and print
# "ready 1"; at the next line "ok 300", and they exit.

# grow_under_run PROGRAM SCRIPT HI [malloc]: under memwatch run (as the fifo
# target r), capture from the start: nearly all 300 MiB are sampled, 240 to HI
# MiB live (live_total's kind: malloc); memwatch run exits 0.
grow_under_run() {
	local prog=${1##*/} hi=$3 kind=${4:-} mw pid
	start_fifo_target r timeout -k 5 60 "$MEMWATCH" run -q -- "$1" "$2"
	mw=$target_pid
	if wait_ready r "0 [0-9]*"; then
		pid=$(awk '$1 == "ready" && $2 == 0 { print $3 }' r.out)
		if step r && wait_ready r 1; then
			run_mw 0 snap -p "$pid" -w 0 -o r.snap
			[ -s r.snap ] && live_total r.snap $kind &&
				expect_range "$prog: live bytes sampled under memwatch run" "$live" $((240 * MIB)) $((hi * MIB))
		fi
		step r
	fi
	grown_end r "$mw" "memwatch run -- $prog $2"
}

# grow_attached PROGRAM SCRIPT HI [malloc]: started plainly (as the fifo target
# p), watched by memwatch -p with a +32 MiB trigger: attached once the growth
# passes it, the final snapshot holds what was kept after that (about 300 - 32
# MiB): 150 to HI MiB live. memwatch and the script exit 0.
grow_attached() {
	local prog=${1##*/} hi=$3 kind=${4:-} mw pid st last
	start_fifo_target p "$1" "$2"
	pid=$target_pid
	if wait_ready p "0 [0-9]*"; then
		"$MEMWATCH" -p "$pid" -i 200ms -t +32MiB -d 15s -q -o p.log >w.out 2>w.err &
		mw=$!
		started_pids="$started_pids $mw"
		wait_until "grep -q '^# event .* start' p.log 2>/dev/null" 30 && step p && wait_ready p 1
		wait "$mw"
		st=$?
		[ "$st" -eq 0 ] || { fail "$prog: memwatch -p $pid: status $st"; sed 's/^/  | /' w.err >&2; }
		expect_grep "^# event .* $pid capture-start" p.log
		last=$(ls p."$pid".*-final.snap 2>/dev/null | head -n 1)
		if [ -n "$last" ]; then
			live_total "$last" $kind &&
				expect_range "$prog: live bytes sampled after memwatch -p attached" "$live" $((150 * MIB)) $((hi * MIB))
		else
			fail "$prog: memwatch -p wrote no final snapshot"
			sed 's/^/  | /' p.log w.err >&2
		fi
		step p
	fi
	grown_end p "$pid" "$prog $2"
}

# grown_end NAME PID WHAT: its stdin closed (a script still waiting for a line
# goes on), the target NAME exits 0 having printed "ok 300".
grown_end() {
	local st
	end_target "$1"
	wait "$2"
	st=$?
	[ "$st" -eq 0 ] || { fail "$3: status $st"; sed 's/^/  | /' "$1.err" >&2; }
	expect_grep '^ok 300$' "$1.out"
}

# The CPythons of run-python-objects.sh, run-python-buffers.sh and
# run-python-native.sh. find_cpython MINOR: $found, a CPython 3.MINOR
# interpreter of pyenv's (a build with a shared libpython) or the system's
# (Debian's links libpython into the executable), or nothing.
find_cpython() {
	found=
	for p in "${HOME:-/nonexistent}"/.pyenv/versions/3."$1".*/bin/python3."$1" \
		 /usr/local/bin/python3."$1" /usr/bin/python3."$1"; do
		if [ -x "$p" ] && "$p" -c "import sys; sys.exit(sys.version_info[:2] != (3, $1))" 2>/dev/null; then
			found=$p
			return 0
		fi
	done
}

# readable_cpythons: $cpythons, "LABEL=PATH" words, one for each CPython the
# agent reads that is installed: Debian's python3 (3.11, static) and its debug
# build python3.11-dbg, 3.8 to 3.13 (pyenv's builds, or the system's), and
# the sid root's 3.14 and 3.15, release and debug (sid_cpythons). A missing
# one is said on stderr, with the reason.
readable_cpythons() {
	local m
	cpythons=
	if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
		cpythons="debian-3.11=/usr/bin/python3"
	else
		echo "note: Debian's python3 (3.11) is not installed: not tested" >&2
	fi
	if [ -x /usr/bin/python3.11-dbg ]; then
		cpythons="$cpythons debian-3.11-dbg=/usr/bin/python3.11-dbg"
	else
		echo "note: python3.11-dbg is not installed: the debug build is not tested" >&2
	fi
	for m in 8 9 10 11 12 13; do
		find_cpython "$m"
		case $found in
		'') echo "note: no CPython 3.$m is installed (a pyenv build): not tested" >&2 ;;
		/usr/bin/python3.11) ;;   # Debian's, above
		*) cpythons="$cpythons 3.$m=$found" ;;
		esac
	done
	sid_cpythons
	cpythons="$cpythons$sidpys"
}

# watch_hoard NAME PYTHON MODE [OPTIONS...]: py_hoard.py MODE (as a fifo
# target named after NAME) watched by memwatch -p with a +32 MiB trigger and
# OPTIONS, each step taken on an event, never after a time: the script grows
# 40 MiB once memwatch has its baseline (the first sample in the run log),
# which fires the trigger; 24 MiB more once the capture has started, its first
# snapshot is taken and the agent's CPython state is settled (python=on, or
# unreadable or unsupported for one read native-only), and then memwatch is
# ended by SIGTERM, which takes the final snapshot of all that. The report is
# in NAME.report, memwatch's stderr in NAME.stderr, the run log in NAME.log.
# memwatch exits 143 (ended by SIGTERM), the trigger fires, the script ends
# with ok. With $hoard_env set (VAR=VALUE), the script runs with it in its
# environment.
hoard=${top_srcdir:?}/tests/targets/py_hoard.py
hoard_env=
watch_hoard() {
	local name=$1 python=$2 mode=$3 mw st f
	shift 3
	# the fifo target's name, a shell word (its holder is a variable)
	f=$(echo "$name" | tr -c 'A-Za-z0-9_\n' _)
	start_fifo_target "$f" env ${hoard_env:+"$hoard_env"} "$python" "$hoard" "$mode" 40 24
	t=$target_pid
	wait_ready "$f" 0 || { end_target "$f"; return 0; }
	"$MEMWATCH" -p "$t" -i 200ms -d 120s -q --trigger +32MiB -o "$name.log" "$@" \
		>"$name.report" 2>"$name.stderr" &
	mw=$!
	started_pids="$started_pids $mw"
	if wait_until "grep -Eq '^[0-9.]+ $t ' '$name.log' 2>/dev/null" 30 &&
	   step "$f" && wait_ready "$f" 1 60 &&
	   wait_until "grep -Eq '^# event [0-9.]+ $t snapshot path=' '$name.log'" 60 &&
	   python_state "$t" '\(on\|unreadable\|unsupported\)' &&
	   step "$f" && wait_ready "$f" 2 60; then
		kill -TERM "$mw"
	else
		sed 's/^/  log: /' "$name.log" >&2
		kill -TERM "$mw" 2>/dev/null
	fi
	wait "$mw"
	st=$?
	[ "$st" -eq 143 ] || { fail "$name: memwatch -p $t: exit status $st, expected 143 (SIGTERM)"
		sed 's/^/  | /' "$name.stderr" >&2; }
	expect_grep "^# event [0-9.]+ $t capture-start " "$name.log"
	# end of file on its stdin: the script ends wherever it is
	end_target "$f"
	wait "$t"
	st=$?
	[ "$st" -eq 0 ] || { fail "$name: python exited with status $st"; sed 's/^/  | /' "$f.err" >&2; }
	expect_grep '^ok$' "$f.out"
	expect_no_grep 'Fatal Python error|Segmentation|Traceback' "$f.err"
}

# top_stack_share WHAT REPORT: $share, the percentage of the sampled growth
# (the change of the live heap) that REPORT's growth rows whose visible stack
# is the top row's hold together (rows told apart only by the interpreter
# frames they hide, "(via N frames in ...)", are one stack the user sees).
top_stack_share() {
	share=$(awk '
	function bytes(v, u) {
		sub(/^\+/, "", v); sub(/,$/, "", u)
		return v * (u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : 1)
	}
	/^change +live heap/ { total = bytes($4, $5) }
	/^growth by call stack/ { intable = 1; next }
	intable && /^$/ { intable = 0 }
	intable && /^ +[0-9]+ +[+-][0-9.]+ / {
		if (key != "") { sum[key] += g; if (rows == 1) first = key }
		g = bytes($2, $3); key = $0
		sub(/^.* (new|grown|shrunk|gone|unchanged) +/, "", key)
		sub(/ +\(via [^)]*\)/, "", key)
		rows++
		next
	}
	intable && /^ +mostly / { next }   # the types of its objects, not a frame
	intable && key != "" { k = $0; sub(/^ +/, "", k); key = key ";" k; next }
	END {
		if (key != "") { sum[key] += g; if (rows == 1) first = key }
		if (total > 0 && first != "") printf "%d\n", 100 * sum[first] / total
	}' "$2")
	echo "$1: the top visible stack holds ${share:-no} % of the sampled growth"
}

# The Debian sid root of tests/install-deps.sh --tests, with CPython 3.14
# and 3.15 and their debug builds (MEMWATCH_TEST_SID overrides where).
SID=${MEMWATCH_TEST_SID:-/opt/memwatch-tests/sid}

# sid_wrapper PY [noproc]: ./sid-PY (./sid-PY-noproc), a program that runs
# the root's PY (python3.14, python3.14d...) inside the root through
# tests/sid-python.sh (with --noproc: no /proc mounted, as in a plain
# chroot). Started as "./sid-PY SCRIPT ARGS", it is the interpreter's process.
sid_wrapper() {
	local out=sid-${1##*/} opt=
	[ "${2:-}" != noproc ] || { out=sid-${1##*/}-noproc; opt=--noproc; }
	printf '#!/bin/sh\nMEMWATCH_TEST_SID=%s exec %s %s %s "$@"\n' "$SID" \
		"$top_srcdir/tests/sid-python.sh" "$opt" "$1" >"$out"
	chmod +x "$out"
}

# sid_cpythons: $sidpys, "LABEL=PROGRAM" words, one for each CPython of the
# sid root the agent reads (3.14, 3.15, release and debug builds: linked into
# the executable, as Debian builds them; and 3.14's shared libpython, in a
# program that calls its Py_BytesMain), each run through its sid_wrapper; a
# missing one is said on stderr, with the reason.
sid_cpythons() {
	local v d
	sidpys=
	if [ ! -x "$SID/usr/bin/python3.14" ] && [ ! -x "$SID/usr/bin/python3.15" ]; then
		echo "note: no Debian sid root in $SID (sh tests/install-deps.sh --tests): CPython 3.14 and 3.15 not tested" >&2
		return 0
	fi
	if [ "$(id -u)" -ne 0 ] || ! unshare --mount true 2>/dev/null; then
		echo "note: cannot enter the sid root (unshare --mount and chroot need root): CPython 3.14 and 3.15 not tested" >&2
		return 0
	fi
	for v in 3.14 3.15; do
		for d in '' d; do
			if [ -x "$SID/usr/bin/python$v$d" ]; then
				sid_wrapper "python$v$d"
				sidpys="$sidpys $v${d:+-dbg}=$PWD/sid-python$v$d"
			else
				echo "note: $SID has no python$v$d: not tested" >&2
			fi
		done
	done
	if [ -r "$SID/usr/lib/x86_64-linux-gnu/libpython3.14.so" ] && command -v "${CC:-cc}" >/dev/null 2>&1; then
		printf 'int Py_BytesMain(int, char **);\nint main(int c, char **v) { return Py_BytesMain(c, v); }\n' \
			>pyshared.c
		# its libraries are the root's: not linked against ours
		if "${CC:-cc}" -O2 pyshared.c -o python3.14-shared -L"$SID/usr/lib/x86_64-linux-gnu" -lpython3.14 \
			-Wl,--unresolved-symbols=ignore-in-shared-libs >pyshared.out 2>&1; then
			sid_wrapper "$PWD/python3.14-shared"
			sidpys="$sidpys 3.14-shared=$PWD/sid-python3.14-shared"
		else
			echo "note: cannot link a program with the sid root's libpython3.14: not tested ($(head -n 1 pyshared.out))" >&2
		fi
	else
		echo "note: no libpython3.14.so in $SID (libpython3.14-dev) or no C compiler: the shared libpython not tested" >&2
	fi
}
