#!/bin/sh
# run-top-python.sh: memwatch top on a CPython script (Debian's python3): the
# rows are headed by the script's own Python functions at their lines, and a
# row's stack has its Python frames down to <module>.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
. "$top_srcdir/tests/top-lib.sh"
need_ptrace
need_py311

"$py" "$script" objects 60 >py.out 2>py.err &
t=$!
started_pids="$started_pids $t"
wait_until "grep -q ready py.out" 30
top_start p 120 40 -p "$t" -i 500ms --capture now -o py.log

top_row p "grow_small_objects  py_grow\.py:$small_line" 30
keys p Enter
see p "^> grow_small_objects  py_grow\.py:$small_line"
expect_grep "^  for_seconds  py_grow\.py:[0-9]+" p.pane
expect_grep "^  <module>  py_grow\.py:[0-9]+" p.pane
keys p Escape
keys p b
see p "by function"
top_row p "grow_small_objects *(\(weak\))? *\$"
keys p q
top_quit p 0
kill -0 "$t" 2>/dev/null || fail "the script died"
finish
