#!/bin/sh
# run-python-newer.sh: CPython versions other than Debian 12's, where one is
# installed (pyenv builds on a development machine; CI machines have none, and
# the test then skips). 3.13, read through its _Py_DebugOffsets table, watched
# by memwatch -p: a script growing small objects from one function is named in
# the top row with its file and line, and the sampled stacks explain >= 90 % of
# the RSS growth; a script growing bytes objects has the Python caller above
# the native allocation path; under PYTHONMALLOC=mimalloc, which serves every
# size itself (malloc sees none of it), the bytes objects are counted too.
# (3.12 and the other versions: run-python-objects.sh, run-python-buffers.sh.)
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace

# find MINOR: a CPython 3.MINOR interpreter, or nothing
find_python() {
	for p in "${HOME:-/nonexistent}"/.pyenv/versions/3."$1".*/bin/python3."$1" /usr/bin/python3."$1" /usr/local/bin/python3."$1"; do
		[ -x "$p" ] && "$p" -c "import sys; sys.exit(sys.version_info[:2] != (3, $1))" 2>/dev/null &&
			{ echo "$p"; return; }
	done
}
py13=$(find_python 13)
[ -n "$py13" ] || skip "no CPython 3.13 is installed (a pyenv build): nothing to test"

echo "CPython 3.13: $py13"
watch_script objects "$py13" objects -r 64KiB
expect_top_row 3.13 objects.report grow_small_objects "$small_line"
expect_explained 3.13 objects.report 90
watch_script bytes "$py13" bytes
expect_top_row 3.13 bytes.report grow_bytes "$bytes_line"
last=$(ls bytes.*-final.snap 2>/dev/null | head -n 1)
if [ -n "$last" ]; then
	# the native frames under the Python caller (a merged row's folded stack
	# ends at its head: --all-frames gives each stack whole)
	run_mw 0 show -F folded --all-frames "$last"
	expect_grep ';<module>;for_seconds;grow_bytes;[^;]+;.* [0-9]+$' out
else
	fail "3.13: no final snapshot"
fi
pymalloc=mimalloc
watch_script mimalloc "$py13" bytes -r 64KiB
pymalloc=
expect_top_row "3.13 mimalloc" mimalloc.report grow_bytes "$bytes_line"
expect_explained "3.13 mimalloc" mimalloc.report 60

finish
