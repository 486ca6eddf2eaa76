#!/bin/sh
# run-python-debug.sh: CPython 3.11 under its debug allocators, watched by
# memwatch -p. Debian's debug build (python3.11-dbg: Py_DEBUG, whose
# structures the agent reads at the release build's offsets, see
# run-python-offsets) runs pymalloc under the debug hooks, which add three
# words to every request: a script growing small objects from one function is
# named in the top row, and the sampled stacks explain >= 90 % of the RSS
# growth. Debian's python3 with PYTHONMALLOC=malloc_debug: every block is
# malloc's, counted once by the hooks (not again by the wrappers), at its
# request (malloc's own overhead on small blocks is not counted: >= 70 %).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
ran=0

# watch NAME PYTHON LO HI [PYTHONMALLOC]: the objects script watched until 8 s
# with a +32 MiB trigger at 64 KiB; checks the top row and the share of the RSS
# growth explained, which must lie in LO..HI %.
watch() {
	name=$1 lo=$3 hi=$4
	pymalloc=${5:-}
	watch_script "$name" "$2" objects -r 64KiB
	pymalloc=
	expect_top_row "$name" "$name.report" grow_small_objects "$small_line"
	expect_explained "$name" "$name.report" "$lo" "$hi"
	# the live heap's growth against the RSS growth, uncapped: counted twice,
	# small blocks would make it far larger
	ratio=$(awk '/^change +live heap/ {
		n = split($0, w, /[ ,]+/)
		for (i = 1; i < n; i++) if (w[i] ~ /^\+[0-9.]+$/) {
			v = substr(w[i], 2); u = w[i + 1]
			m = u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : 1
			x[++k] = v * m
		}
		if (k >= 2 && x[2] > 0) printf "%d\n", 100 * x[1] / x[2]
	}' "$name.report")
	echo "$name: live heap growth ${ratio:-?} % of the RSS growth"
	[ -n "$ratio" ] && [ "$ratio" -le "$hi" ] ||
		fail "$name: the live heap grew by '${ratio:-?}' % of the RSS growth, expected <= $hi"
	ran=$((ran + 1))
}

dbg=/usr/bin/python3.11-dbg
if [ -x "$dbg" ]; then
	watch debug "$dbg" 90 115
else
	echo "note: $dbg is not installed (python3.11-dbg, sh tests/install-deps.sh --tests): debug build not tested" >&2
fi
py=/usr/bin/python3
if [ -x "$py" ] && "$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
	watch malloc-debug "$py" 70 115 malloc_debug
fi
[ "$ran" -gt 0 ] || skip "neither $dbg nor a CPython 3.11 $py is installed"
finish
