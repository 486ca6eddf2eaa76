#!/bin/sh
# run-python-native.sh: a CPython the agent cannot read is captured
# native-only, says so in one line, and has nothing of it wrapped. CPython 3.6
# and 3.7 (pyenv's builds, where installed: versions before 3.8 are not read),
# and CPythons the agent reads whose start-up layout check is made to fail
# (MEMWATCH_TEST_PY_LAYOUT=fail): Debian's python3 (static) and a pyenv 3.12
# (shared libpython), and the sid root's 3.14 and 3.15 (static, run inside
# the root; 3.14's in a plain chroot without /proc, where the agent cannot
# read its own executable, command line or RSS: the report still names the
# process and gives its RSS change, though the sampled heap barely grew).
# Each grows small objects (py_hoard.py objects) watched
# by memwatch -p: memwatch says once on stderr that it captures native-only
# (the version, or what the check found), the run log has the event, the
# report says it and names CPython's object arenas as where the unexplained
# growth is, and so does memwatch show of a snapshot (table and JSON); the
# sampled stacks explain little of it (pymalloc's objects are not sampled: its
# allocator was not wrapped).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
ran=0

# native NAME PYTHON WHY: the checks above; WHY, the stderr line's pattern
native() {
	local name=$1 py=$2 why=$3
	echo "$name: $py"
	watch_hoard "$name" "$py" objects
	expect_grep "^memwatch: pid $t: CPython $why: captured native-only, without its small objects and Python frames\$" "$name.stderr"
	[ "$(grep -c 'native-only' "$name.stderr")" -eq 1 ] || fail "$name: not said exactly once: $(cat "$name.stderr")"
	expect_grep "^# event [0-9.]+ $t python-native-only version=3\.[0-9]+" "$name.log"
	expect_grep '^  CPython 3\.[0-9]+ captured native-only \(memwatch cannot read it\)' "$name.report"
	expect_grep "the growth is in CPython's object arenas" "$name.report"
	expect_grep "^    \(pymalloc\), which this version's objects cannot be sampled in" "$name.report"
	expect_no_grep 'outside malloc' "$name.report"
	expect_grep '^  unexplained: sampled stacks explain only ' "$name.report"
	# one snapshot says it too, in a table and in JSON
	last=$(ls "$name".*-final.snap 2>/dev/null | head -n 1)
	if [ -n "$last" ]; then
		run_mw 0 show "$last"
		expect_grep '^  CPython 3\.[0-9]+ captured native-only \(memwatch cannot read it\)' out
		run_mw 0 show -F json "$last"
		expect_grep '"python": \{"state": "native-only", "version": "3\.[0-9]+"\}' out
	else
		fail "$name: memwatch wrote no final snapshot"
	fi
	ran=$((ran + 1))
}

for m in 6 7; do
	find_cpython "$m"
	if [ -n "$found" ]; then
		native "3.$m" "$found" "3\\.$m cannot be read \\(3\\.8 to 3\\.15 can\\)"
	else
		echo "note: no CPython 3.$m is installed (a pyenv build): not tested" >&2
	fi
done

hoard_env=MEMWATCH_TEST_PY_LAYOUT=fail
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
	native debian-3.11-check /usr/bin/python3 \
		"3\\.11 is not laid out as memwatch reads it \\(the check made to fail by MEMWATCH_TEST_PY_LAYOUT\\)"
else
	echo "note: Debian's python3 (3.11) is not installed: its failed check not tested" >&2
fi
find_cpython 12
if [ -n "$found" ]; then
	native 3.12-check "$found" \
		"3\\.12 is not laid out as memwatch reads it \\(the check made to fail by MEMWATCH_TEST_PY_LAYOUT\\)"
else
	echo "note: no CPython 3.12 is installed (a pyenv build): its failed check not tested" >&2
fi
sid_cpythons
for v in 3.14 3.15; do
	case " $sidpys " in
	*" $v=$tmp/sid-python$v "*) ;;
	*) echo "note: no CPython $v in the sid root: its failed check not tested" >&2; continue ;;
	esac
	py=$tmp/sid-python$v
	if [ "$v" = 3.14 ]; then
		sid_wrapper python3.14 noproc
		py=$tmp/sid-python3.14-noproc
	fi
	native "$v-check" "$py" \
		"${v%.*}\\.${v#*.} is not laid out as memwatch reads it \\(the check made to fail by MEMWATCH_TEST_PY_LAYOUT\\)"
	# the process named (its command line's first word), its RSS change
	# given (read by memwatch where the agent could not)
	expect_grep "^before +$v-check\\.$t\\.[0-9]+\\.snap: pid [0-9]+ python$v, " "$v-check.report"
	expect_grep '^change +live heap [-+0-9.]+ [KMG]?i?B, RSS \+[0-9.]+ [KMG]iB \(' "$v-check.report"
	expect_no_grep 'pid [0-9]+ \?,' "$v-check.report"
done
hoard_env=
[ "$ran" -gt 0 ] || skip "no CPython 3.6, 3.7 or 3.11/3.12 to make fail is installed"
finish
