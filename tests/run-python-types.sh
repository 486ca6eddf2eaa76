#!/bin/sh
# run-python-types.sh: objects by type, on every CPython the agent reads that
# is installed (Debian's python3 and python3.11-dbg, and 3.8 to 3.13: pyenv's
# builds; a missing one is said and skipped). py_events.py keeps instances of
# its class Event in a module-level list, with churn of tuples and str made and
# dropped meanwhile. Between two snapshots of one capture it creates N events
# (it prints N): memwatch diff --by type ranks Event among the top three
# growing types (the rows of objects: "<not an object>" is not a type) with an
# estimated count of objects within 30 % of N, under it the line of the script
# that created them; JSON names the type and the line; in the same diff by
# stack, a row says it holds mostly Event (3.8 to 3.10 make each instance's
# __dict__ in __init__: the top stack row there is mostly dict).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
need_snapdump
readable_cpythons
[ -n "$cpythons" ] || skip "no CPython 3.8 to 3.13 is installed"
events=$top_srcdir/tests/targets/py_events.py
line=$(grep -n 'AUDIT_LOG.append(Event(' "$events" | cut -d: -f1)

for v in $cpythons; do
	name=${v%%=*} py=${v#*=}
	echo "$name: $py"
	# a name the fifo helpers can hold in a variable
	name=$(echo "$name" | tr -c 'a-z0-9\n' '_')
	start_script "$name" "$py" "$events" 100000 || continue
	run_mw 0 snap -p "$t" -w 1 -o "$name.0.snap"
	start_ctl "$name.ctl" "$t" start=16384 sleep=120000
	python_state "$t" on
	step "$name"
	wait_until "[ \$(grep -c '^created' $name.out) -ge 1 ]" 60
	run_mw 0 snap -p "$t" -o "$name.1.snap"
	step "$name"
	wait_until "[ \$(grep -c '^created' $name.out) -ge 2 ]" 60
	run_mw 0 snap -p "$t" -o "$name.2.snap"
	created=$(awk '$1 == "created" { n = $2 } END { print n + 0 }' "$name.out")

	run_mw 0 diff --by type -n 10 "$name.1.snap" "$name.2.snap"
	cp out "$name.types"
	expect_grep '^growth by type' "$name.types"
	# the rank of Event among the growing types, and its count of objects
	awk '/^growth by type/ { t = 1; next } t && /^$/ { t = 0 }
	     t && /^ +[0-9]+ +\+/ && $NF !~ /^</ { rank++; if ($NF == "Event") { print rank, $(NF - 3); exit } }' \
		"$name.types" >"$name.rank"
	read -r rank count <"$name.rank" || { rank=; count=; }
	echo "$name: Event ranks ${rank:-nowhere} with ${count:-no} objects, $created created"
	[ -n "$rank" ] && [ "$rank" -le 3 ] ||
		{ fail "$name: Event is not among the top three growing types"; sed 's/^/  | /' "$name.types" >&2; }
	count=${count#+}
	[ -n "$count" ] && [ "$created" -gt 0 ] &&
		[ $((count * 10)) -ge $((created * 7)) ] && [ $((count * 10)) -le $((created * 13)) ] ||
		fail "$name: Event counted '${count:-}' objects, $created created (30 % allowed)"
	# the line that made them, under the type
	awk '/ grown +Event$/ { getline; print; exit }' "$name.types" >"$name.line"
	expect_grep "from (record|Event\\.__init__|__init__)  py_events\\.py:[0-9]+" "$name.line"

	run_mw 0 diff --by type -F json -n 3 "$name.1.snap" "$name.2.snap"
	expect_grep '"by": "type"' out
	expect_grep "\"type\": \"Event\", \"lines\": \\[\\{\"function\": \"record\", \"file\": \"[^\"]*py_events.py\", \"line\": $line" out

	run_mw 0 diff -n 5 "$name.1.snap" "$name.2.snap"
	expect_grep '^ +mostly .*Event' out

	kill "$ctl" 2>/dev/null
	wait "$ctl" 2>/dev/null
	end_target "$name"
	finished "$name" "$t"
done
finish
