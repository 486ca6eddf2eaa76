#!/bin/sh
# run-top-python-types.sh: memwatch top by type on a CPython service (Debian's
# python3) whose method AuditTrail.record keeps more and more Event objects
# (tests/targets/py_audit.py): with --by type, and after b has cycled to it
# from by stack, Event is the top row of objects within a few intervals, with
# its estimated count; opened, it shows the line of AuditTrail.record that
# allocates them; sorted by live or allocated bytes, and after a mark, it
# stays on top. Back by stack, the opened top row shows its Python frames
# down to <module> and the types its objects mostly are. And on the sid
# root's CPython 3.14 and 3.15 (release builds, run inside the root): by type,
# Event on top, opened on the line of AuditTrail.record.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
. "$top_srcdir/tests/top-lib.sh"
need_ptrace
need_py311
audit=$top_srcdir/tests/targets/py_audit.py
line=$(grep -n 'self.events.append(Event(' "$audit" | cut -d: -f1)

# start_audit NAME: a new py_audit.py (it grows for about 30 s), as $t
start_audit() {
	"$py" "$audit" >"$1.out" 2>"$1.err" &
	t=$!
	started_pids="$started_pids $t"
	wait_until "grep -q ready $1.out" 30
}

# it_went_on NAME: the script runs on, without a Python error
it_went_on() {
	kill -0 "$t" 2>/dev/null || fail "$1: the script died"
	expect_no_grep 'Fatal Python error|Segmentation|Traceback' "$1.err"
}

# top_type NAME TYPE [SECS]: the first row of objects (not a "<...>" row such
# as "<not an object>") is TYPE, with a count of objects.
top_type() {
	if ! wait_until "pane $1; awk '/^ +GROWTH +/ { t = 1; next } t && NF >= 6 && \$NF !~ /^</ { print; exit }' $1.pane |
			grep -Eq -- '^\+ *[0-9.]+ [KMG]?i?B .* [0-9]{2,} +(new|grown) .* $2\$'" "${3:-30}"; then
		sed 's/^/  screen: /' "$1.pane" >&2
		return 1
	fi
	return 0
}

# --by type from the start
start_audit pyty
top_start ty 120 40 -p "$t" -i 500ms --capture now -o ty.log --by type
see ty "sort growth  by type"
see ty "^ +GROWTH .* OBJECTS .* TYPE"
top_type ty "__main__\.Event" 30
# the screen, in the log
sed 's/^/  screen: /' ty.pane
# opened: the lines of the user's code that allocate it
row=$(awk '/^ +GROWTH +/ { t = 1; next } t && NF >= 6 { n++; if ($NF == "__main__.Event") { print n; exit } }' ty.pane)
[ -n "$row" ] || row=1
i=1
while [ "$i" -lt "$row" ]; do
	keys ty Down
	i=$((i + 1))
done
keys ty Enter
see ty "^TYPE __main__\.Event: "
see ty "^ +\+ *[0-9.]+ [KMG]?i?B +[0-9]+ +AuditTrail\.record  py_audit\.py:$line\$"
sed 's/^/  screen: /' ty.pane
keys ty Escape
see ty "^ +GROWTH "
# sorted by live bytes; by allocated, which types order by live
keys ty s
see ty "sort live  by type"
top_type ty "__main__\.Event" 20
keys ty s
see ty "sort alloc \(types count live objects: ordered by live\)  by type"
top_type ty "__main__\.Event" 20
keys ty s
see ty "sort growth  by type"
# a mark: Event grows on from there
keys ty m
see ty "since mark"
top_type ty "__main__\.Event" 20
keys ty q
top_quit ty 0
it_went_on pyty

# by stack, then b to function, line and type
start_audit pyst
top_start st 120 40 -p "$t" -i 500ms --capture now -o st.log
see st "sort growth  by stack"
top_row st "AuditTrail\.record  py_audit\.py:$line" 30
keys st Enter
see st "^> AuditTrail\.record  py_audit\.py:$line"
expect_grep "^  serve  py_audit\.py:[0-9]+" st.pane
expect_grep "^  main  py_audit\.py:[0-9]+" st.pane
expect_grep "^  <module>  py_audit\.py:[0-9]+" st.pane
see st "^mostly .*Event"
sed 's/^/  screen: /' st.pane
keys st Escape
keys st b
see st "sort growth  by function"
keys st b
see st "sort growth  by line"
keys st b
see st "sort growth  by type"
top_type st "__main__\.Event" 20
keys st b
see st "sort growth  by stack"
keys st q
top_quit st 0
it_went_on pyst

# CPython 3.14 and 3.15, inside the sid root
sid_cpythons
for v in $sidpys; do
	case ${v%%=*} in *-dbg) continue ;; esac
	n=s$(echo "${v%%=*}" | tr -c 'a-z0-9\n' '_')
	py=${v#*=}
	echo "${v%%=*}: $py"
	start_audit "py$n"
	top_start "$n" 120 40 -p "$t" -i 500ms --capture now -o "$n.log" --by type
	see "$n" "sort growth  by type"
	top_type "$n" "__main__\.Event" 30
	sed 's/^/  screen: /' "$n.pane"
	row=$(awk '/^ +GROWTH +/ { t = 1; next } t && NF >= 6 { n++; if ($NF == "__main__.Event") { print n; exit } }' "$n.pane")
	[ -n "$row" ] || row=1
	i=1
	while [ "$i" -lt "$row" ]; do
		keys "$n" Down
		i=$((i + 1))
	done
	keys "$n" Enter
	see "$n" "^TYPE __main__\.Event: "
	see "$n" "^ +\+ *[0-9.]+ [KMG]?i?B +[0-9]+ +AuditTrail\.record  py_audit\.py:$line\$"
	keys "$n" Escape
	keys "$n" q
	top_quit "$n" 0
	it_went_on "py$n"
done
finish
