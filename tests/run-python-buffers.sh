#!/bin/sh
# run-python-buffers.sh: on every CPython the agent reads that is installed
# (as run-python-objects.sh), a script growing 64 KiB buffers through C
# functions (bytes, bytearray, array.array: malloc'd by the interpreter) from
# one method (py_hoard.py buffers), watched by memwatch -p: the growth report
# has that method's rows, and in the final snapshot's stacks the Python caller
# (main, then the method) stands above the native path of each of the three
# C functions down to the allocation.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
readable_cpythons
[ -n "$cpythons" ] || skip "no CPython 3.8 to 3.15 is installed"
first=$(grep -n 'items.append(bytes(65536))' "$hoard" | cut -d: -f1)
lines="$first|$((first + 1))|$((first + 2))"

for v in $cpythons; do
	name=${v%%=*} py=${v#*=}
	echo "$name: $py"
	watch_hoard "$name" "$py" buffers
	expect_grep "^ +[0-9]+ +\+.*  (Hoard\.)?grow_buffers  py_hoard\.py:($lines)( |\$)" "$name.report"
	last=$(ls "$name".*-final.snap 2>/dev/null | head -n 1)
	if [ -z "$last" ]; then
		fail "$name: memwatch wrote no final snapshot"
		continue
	fi
	# (--all-frames: each stack whole, its native frames under the Python caller)
	run_mw 0 show -F folded --all-frames "$last"
	cp out "$name.folded"
	# main, Hoard.grow_buffers, then the native path of each C function
	for c in bytes_new "bytearray_(__)?init(__)?" array_new; do
		expect_grep ";main;([^;]+;)*(Hoard\.)?grow_buffers;([^;]+;)*$c;" "$name.folded"
	done
	expect_no_grep 'native-only|cannot be read|not laid out' "$name.stderr"
done
finish
