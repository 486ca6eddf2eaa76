#!/bin/sh
# run-python-newer.sh: CPython versions other than Debian 12's, where one is
# installed (pyenv builds on a development machine; CI machines have none, and
# the test then skips). 3.13, read through its _Py_DebugOffsets table, watched
# by memwatch -p: a script growing small objects from one function is named in
# the top row with its file and line, and the sampled stacks explain >= 90 % of
# the RSS growth; a script growing bytes objects has the Python caller above
# the native allocation path; under PYTHONMALLOC=mimalloc, which serves every
# size itself (malloc sees none of it), the bytes objects are counted too.
# 3.12 is captured native-only, said in one line.
. "$top_srcdir/tests/lib.sh"

[ -r /proc/sys/kernel/yama/ptrace_scope ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope)" -ge 2 ] &&
	[ "$(id -u)" -ne 0 ] && skip "ptrace is restricted (yama ptrace_scope >= 2)"
script=$top_srcdir/tests/targets/py_grow.py
small_line=$(grep -n 'kept.append((i, "item-' "$script" | cut -d: -f1)
bytes_line=$(grep -n 'kept.append(bytes(' "$script" | cut -d: -f1)

# find MINOR: a CPython 3.MINOR interpreter, or nothing
find_python() {
	for p in "${HOME:-/nonexistent}"/.pyenv/versions/3."$1".*/bin/python3."$1" /usr/bin/python3."$1" /usr/local/bin/python3."$1"; do
		[ -x "$p" ] && "$p" -c "import sys; sys.exit(sys.version_info[:2] != (3, $1))" 2>/dev/null &&
			{ echo "$p"; return; }
	done
}
py13=$(find_python 13)
py12=$(find_python 12)
[ -n "$py13$py12" ] || skip "no CPython 3.13 or 3.12 is installed (pyenv builds): nothing to test"

# watch NAME PYTHON MODE [OPTIONS]: the script watched until 8 s with a +32 MiB
# trigger; the report is in NAME.report. $pymalloc: PYTHONMALLOC, if set.
pymalloc=
watch() {
	name=$1 py=$2 mode=$3
	shift 3
	if [ -n "$pymalloc" ]; then
		env PYTHONMALLOC="$pymalloc" "$py" "$script" "$mode" 12 >"$name.out" 2>"$name.err" &
	else
		"$py" "$script" "$mode" 12 >"$name.out" 2>"$name.err" &
	fi
	t=$!
	started_pids="$started_pids $t"
	wait_until "grep -q ready $name.out 2>/dev/null" 30 || return 0
	run_mw 0 -p "$t" -i 200ms -d 8s -q --trigger +32MiB -o "$name.log" "$@"
	cp out "$name.report"
	wait "$t"
	st=$?
	[ "$st" -eq 0 ] || { fail "$name: python exited with status $st"; sed 's/^/  | /' "$name.err" >&2; }
	expect_grep '^ok$' "$name.out"
}

if [ -n "$py13" ]; then
	echo "CPython 3.13: $py13"
	watch objects "$py13" objects -r 64KiB
	row=$(grep -E '^ +1 +\+' objects.report)
	echo "$row" | grep -Eq "  grow_small_objects  .*py_grow\.py:$small_line( |$)" ||
		fail "3.13: the top row does not name grow_small_objects at py_grow.py:$small_line: $row"
	pct=$(sed -n 's/^  sampled stacks explain \([0-9]*\) % of the RSS growth.*/\1/p' objects.report)
	[ -n "$pct" ] && [ "$pct" -ge 90 ] ||
		{ fail "3.13: the sampled stacks explain '${pct:-no}' % of the RSS growth, expected >= 90"; sed 's/^/  | /' objects.report >&2; }
	watch bytes "$py13" bytes
	row=$(grep -E '^ +1 +\+' bytes.report)
	echo "$row" | grep -Eq "  grow_bytes  .*py_grow\.py:$bytes_line( |$)" ||
		fail "3.13: the top row does not name grow_bytes at py_grow.py:$bytes_line: $row"
	last=$(ls bytes.*-final.snap 2>/dev/null | head -n 1)
	if [ -n "$last" ]; then
		run_mw 0 show -F folded "$last"
		expect_grep ';<module>;for_seconds;grow_bytes;[^;]+;.* [0-9]+$' out
	else
		fail "3.13: no final snapshot"
	fi
	pymalloc=mimalloc
	watch mimalloc "$py13" bytes -r 64KiB
	pymalloc=
	row=$(grep -E '^ +1 +\+' mimalloc.report)
	echo "$row" | grep -Eq "  grow_bytes  .*py_grow\.py:$bytes_line( |$)" ||
		fail "3.13 mimalloc: the top row does not name grow_bytes at py_grow.py:$bytes_line: $row"
	pct=$(sed -n 's/^  sampled stacks explain \([0-9]*\) % of the RSS growth.*/\1/p' mimalloc.report)
	echo "3.13 mimalloc: the sampled stacks explain ${pct:-no} % of the RSS growth"
	[ -n "$pct" ] && [ "$pct" -ge 60 ] ||
		{ fail "3.13 mimalloc: the sampled stacks explain '${pct:-no}' % of the RSS growth, expected >= 60"; sed 's/^/  | /' mimalloc.report >&2; }
else
	echo "note: no CPython 3.13 installed: not tested" >&2
fi

if [ -n "$py12" ]; then
	echo "CPython 3.12: $py12"
	"$py12" "$script" objects 6 >p12.out 2>p12.err &
	t=$!
	started_pids="$started_pids $t"
	if wait_until "grep -q ready p12.out 2>/dev/null" 30; then
		run_mw 0 snap -p "$t" -w 1 -o p12.snap
		expect_grep "^memwatch: pid $t: CPython 3\.12 is not supported \(3\.11 and 3\.13 are\): captured native-only" err
		[ "$(grep -c 'not supported' err)" -eq 1 ] || fail "3.12: said more than once: $(cat err)"
	fi
	wait "$t"
	st=$?
	[ "$st" -eq 0 ] || fail "3.12: python exited with status $st"
	expect_grep '^ok$' p12.out
else
	echo "note: no CPython 3.12 installed: not tested" >&2
fi
finish
