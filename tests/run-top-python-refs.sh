#!/bin/sh
# run-top-python-refs.sh: memwatch top's referrer search on a CPython script
# (Debian's python3) that keeps Event objects in a module-level list
# (AUDIT_LOG; tests/targets/py_refs.py). The view's snapshots search
# nothing until r is pressed: an opened row has no chain and the header no
# search. After r, the header says when the search was made and how long
# Python waited; by type, the Event row opened shows the chain from the
# global that keeps its objects alive and what one Event holds, and still
# does a few snapshots later; by stack, the row of the line that makes the
# Events shows the chain too. On a process that is not CPython, r says so in
# one line.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
. "$top_srcdir/tests/top-lib.sh"
need_ptrace
need_py311
refs=$top_srcdir/tests/targets/py_refs.py
event_line=$(grep -n 'AUDIT_LOG.append(Event(' "$refs" | cut -d: -f1)

# open NAME TYPE: the row of TYPE selected and opened (again if the rows
# moved meanwhile: they are ordered anew at every snapshot)
open() {
	local row i k=0
	while [ "$k" -lt 5 ]; do
		k=$((k + 1))
		pane "$1"
		row=$(awk -v ty="$2" '/^ +GROWTH +/ { t = 1; next } t && NF >= 6 { n++; if ($NF == ty || $(NF - 1) == ty) { print n; exit } }' "$1.pane")
		[ -n "$row" ] || continue
		keys "$1" PPage
		i=1
		while [ "$i" -lt "$row" ]; do
			keys "$1" Down
			i=$((i + 1))
		done
		keys "$1" Enter
		see "$1" "^(TYPE|STACK) " 10 || continue
		grep -q "^TYPE $2: " "$1.pane" && return 0
		keys "$1" Escape
		see "$1" "^ +GROWTH " 10
	done
	fail "$1: cannot open the row of $2"
	sed 's/^/  screen: /' "$1.pane" >&2
	return 1
}

start_script pr "$py" "$refs" 50000
top_start ty 140 50 -p "$t" -i 500ms --capture now -r 64KiB -o ty.log --by type
see ty "capture capturing"
step pr
wait_until "grep -q '^created' pr.out" 60
see ty " __main__\.Event( |\$)"

# no search yet: none with the view's snapshots
open ty __main__.Event
see ty "^ +\+ *[0-9.]+ [KMG]?i?B +[0-9]+ +record  py_refs\.py:$event_line\$"
expect_no_grep "kept alive by|^referrers|one holds" ty.pane
keys ty Escape

# r: one search, with the next snapshot
keys ty r
see ty "^referrers at [0-9.]+ [a-z]+: Python held [0-9.]+ [mun]?s, [1-9][0-9]* chains?, [0-9]+ objects traversed"
sed 's/^/  screen: /' ty.pane
see ty "^ +GROWTH "
open ty __main__.Event
see ty "^kept alive by: __main__\.AUDIT_LOG \(list\) -> \[[0-9]+\] -> __main__\.Event\$"
see ty "^one holds \([0-9.]+ [KMG]?i?B itself\): [0-9]+ [a-z]+ [0-9.]+ [KMG]?i?B"
sed 's/^/  screen: /' ty.pane
keys ty Escape
# still there a few snapshots later, as the script makes more
step pr
wait_until "[ \$(grep -c '^created' pr.out) -ge 2 ]" 60
see ty "^ +GROWTH "
open ty __main__.Event
see ty "^kept alive by: __main__\.AUDIT_LOG \(list\) -> \[[0-9]+\] -> __main__\.Event\$"
keys ty Escape

# by stack: the row of the line that makes the Events
keys ty b
see ty "sort growth  by stack"
# (a row, not the top one: Mark's sets grow about as fast as the Events)
see ty "^ *\+ .* record  py_refs\.py:$event_line\$" 20
row=$(awk -v l="py_refs.py:$event_line" '/^ +GROWTH +/ { t = 1; next } t && NF >= 6 { n++; if (index($0, "record  " l)) { print n; exit } }' ty.pane)
[ -n "$row" ] || fail "no row of record at py_refs.py:$event_line"
i=1
while [ "$i" -lt "${row:-1}" ]; do
	keys ty Down
	i=$((i + 1))
done
keys ty Enter
see ty "^> record  py_refs\.py:$event_line\$"
see ty "^kept alive by: __main__\.AUDIT_LOG \(list\) -> \[[0-9]+\] -> __main__\.Event\$"
sed 's/^/  screen: /' ty.pane
keys ty Escape
keys ty q
top_quit ty 0
end_target pr
finished pr "$t"

# not CPython: said in one line, no search asked
start_target "$TARGETS/demo" 60
wait_libc "$target_pid"
d=$target_pid
top_start c 120 40 -p "$d" -i 500ms --capture now -o c.log
top_row c "cache_store" 20
keys c r
see c "^pid $d is not CPython: no Python objects to search referrers of\$"
expect_no_grep "^referrers" c.pane
keys c q
top_quit c 0
finish
