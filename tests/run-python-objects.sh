#!/bin/sh
# run-python-objects.sh: on every CPython the agent reads that is installed
# (Debian's python3 and python3.11-dbg, 3.8 to 3.13: pyenv's builds, 3.14 and
# 3.15 with their debug builds: inside the sid root of install-deps.sh; a
# missing one is said and skipped), a script growing small objects from one
# line of one method (py_hoard.py objects), watched by memwatch -p: the top row
# of the growth report is that method, with its file and line; the rows whose
# visible stack is the top row's hold >= 80 % of the sampled growth; the
# sampled stacks explain >= 85 % of the RSS growth; no notice of a native-only
# capture.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
readable_cpythons
[ -n "$cpythons" ] || skip "no CPython 3.8 to 3.15 is installed"
line=$(grep -n 'items.append((len(items)' "$hoard" | cut -d: -f1)

for v in $cpythons; do
	name=${v%%=*} py=${v#*=}
	echo "$name: $py"
	watch_hoard "$name" "$py" objects -r 64KiB
	row=$(grep -E '^ +1 +\+' "$name.report")
	case $row in
	*"  grow  py_hoard.py:$line "* | *"  Hoard.grow  py_hoard.py:$line "*) ;;
	*) fail "$name: the top row is not Hoard.grow at py_hoard.py:$line: $row"
	   sed 's/^/  | /' "$name.report" | head -n 40 >&2 ;;
	esac
	top_stack_share "$name" "$name.report"
	[ -n "$share" ] && [ "$share" -ge 80 ] || fail "$name: the top visible stack holds '${share:-no}' % of the sampled growth, expected >= 80"
	expect_explained "$name" "$name.report" 85
	expect_no_grep 'native-only|cannot be read|not laid out' "$name.stderr"
	expect_no_grep 'native-only' "$name.report"
done
finish
