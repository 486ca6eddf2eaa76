#!/bin/sh
# run-python-types.sh: objects by type, on every CPython the agent reads that
# is installed (Debian's python3 and python3.11-dbg, and 3.8 to 3.13: pyenv's
# builds; a missing one is said and skipped; the sid root's 3.14 and 3.15 are
# run-python-types-sid.sh's). py_events.py keeps instances of
# its class Event in a module-level list, with churn of tuples and str made and
# dropped meanwhile. Between two snapshots of one capture it creates N events
# (it prints N): memwatch diff --by type ranks __main__.Event (a class is named
# with its module) among the top three growing types (the rows of objects:
# "<not an object>" is not a type) with an estimated count of objects within
# 30 % of N, under it the line of the script that created them; JSON names the
# type and the line; in the same diff by stack, a row says it holds mostly
# __main__.Event (3.8 to 3.10 make each instance's __dict__ in __init__: the
# top stack row there is mostly dict), and go tool pprof reads a sample
# labelled type:__main__.Event. py_modules.py imports two classes named Entry
# from two modules (pyshop.orders and pyshop.audit) and makes N and N/2 of
# them, and N/4 of a nested class: by type they are three rows,
# pyshop.orders.Entry and pyshop.audit.Entry each with its own count (within
# 30 %), and pyshop.orders.Order.Line; a class whose __module__ is None is
# named by its bare name (Stray); --focus on the function that makes one
# Entry keeps its row and not the other's. The HTML page of a watched run has
# the table by type.
# Some 200 s on a busy 2-core machine; each half about half of that.
# limit: 600
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
need_snapdump
readable_cpythons
# the sid root's CPythons are run-python-types-sid.sh's (types_part=sid), so
# that make runs the two halves side by side
if [ "${types_part:-}" = sid ]; then
	cpythons=$sidpys
	[ -n "$cpythons" ] || skip "no CPython of the sid root is installed (sh tests/install-deps.sh --tests)"
else
	cpythons=${cpythons%"$sidpys"}
	[ -n "$cpythons" ] || skip "no CPython 3.8 to 3.13 is installed"
fi
events=$top_srcdir/tests/targets/py_events.py
mods=$top_srcdir/tests/targets/py_modules.py
# the source tree stays as it is (no __pycache__ of pyshop)
export PYTHONDONTWRITEBYTECODE=1
have_pprof=
if command -v go >/dev/null 2>&1; then
	export HOME="$tmp" GOCACHE="$tmp/gocache" GOPATH="$tmp/go" PPROF_TMPDIR="$tmp/pprof"
	unset GOFLAGS
	go tool pprof -h >/dev/null 2>&1 && have_pprof=yes
fi
[ -n "$have_pprof" ] || echo "note: go tool pprof is not here (golang-go): the pprof labels are not read back" >&2
line=$(grep -n 'AUDIT_LOG.append(Event(' "$events" | cut -d: -f1)

# expect_count NAME TYPE CREATED: in NAME.counts (a type and its count of
# objects a line), TYPE counted within 30 % of CREATED.
expect_count() {
	local count
	count=$(awk -v n="$2" '$1 == n { print $2; exit }' "$1.counts")
	count=${count#+}
	echo "$1: $2 counted ${count:-no} objects, $3 created"
	[ -n "$count" ] && [ "$3" -gt 0 ] &&
		[ $((count * 10)) -ge $(($3 * 7)) ] && [ $((count * 10)) -le $(($3 * 13)) ] ||
		{ fail "$1: $2 counted '${count:-}' objects, $3 created (30 % allowed)"; sed 's/^/  | /' "$1.types" >&2; }
}

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
	awk '/^ +[0-9]+ +[-+]/ { print $NF }' "$name.types" >"$name.names"
	LC_ALL=C expect_no_grep '[^ -~]' "$name.names"
	# the rank of __main__.Event among the growing types, and its count of objects
	awk '/^growth by type/ { t = 1; next } t && /^$/ { t = 0 }
	     t && /^ +[0-9]+ +\+/ && $NF !~ /^</ { rank++; if ($NF == "__main__.Event") { print rank, $(NF - 3); exit } }' \
		"$name.types" >"$name.rank"
	read -r rank count <"$name.rank" || { rank=; count=; }
	echo "$name: __main__.Event ranks ${rank:-nowhere} with ${count:-no} objects, $created created"
	[ -n "$rank" ] && [ "$rank" -le 3 ] ||
		{ fail "$name: __main__.Event is not among the top three growing types"; sed 's/^/  | /' "$name.types" >&2; }
	count=${count#+}
	[ -n "$count" ] && [ "$created" -gt 0 ] &&
		[ $((count * 10)) -ge $((created * 7)) ] && [ $((count * 10)) -le $((created * 13)) ] ||
		fail "$name: __main__.Event counted '${count:-}' objects, $created created (30 % allowed)"
	# the line that made them, under the type
	awk '/ grown +__main__\.Event$/ { getline; print; exit }' "$name.types" >"$name.line"
	expect_grep "from (record|Event\\.__init__|__init__)  py_events\\.py:[0-9]+" "$name.line"

	run_mw 0 diff --by type -F json -n 3 "$name.1.snap" "$name.2.snap"
	expect_grep '"by": "type"' out
	expect_grep "\"type\": \"__main__\\.Event\", \"lines\": \\[\\{\"function\": \"record\", \"file\": \"[^\"]*py_events.py\", \"line\": $line" out

	run_mw 0 diff -n 5 "$name.1.snap" "$name.2.snap"
	expect_grep '^ +mostly .*__main__\.Event' out

	# pprof: the in-use figures of a stack split by type, labelled
	run_mw 0 diff -F pprof -o "$name.pb.gz" "$name.1.snap" "$name.2.snap"
	if [ -n "$have_pprof" ]; then
		go tool pprof -raw "$name.pb.gz" >"$name.raw" 2>"$name.raw.err" ||
			fail "$name: go tool pprof -raw: exit status $?"
		expect_grep 'type:\[__main__\.Event\]' "$name.raw"
	fi

	kill "$ctl" 2>/dev/null
	wait "$ctl" 2>/dev/null
	end_target "$name"
	finished "$name" "$t"

	# two classes named Entry, of two modules: two rows, each named with its
	# module and counted apart (a sample per 4 KiB: enough samples for the
	# smaller one's count)
	m=${name}_mod
	start_script "$m" "$py" "$mods" 100000 || continue
	run_mw 0 snap -p "$t" -w 1 -o "$m.0.snap"
	start_ctl "$m.ctl" "$t" start=4096 sleep=120000
	python_state "$t" on
	step "$m"
	wait_until "[ \$(grep -c '^created' $m.out) -ge 1 ]" 60
	run_mw 0 snap -p "$t" -o "$m.1.snap"
	step "$m"
	wait_until "[ \$(grep -c '^created' $m.out) -ge 2 ]" 60
	run_mw 0 snap -p "$t" -o "$m.2.snap"
	awk '$1 == "created" { a = $2; b = $3 } END { print a + 0, b + 0 }' "$m.out" >"$m.created"
	read -r made_orders made_audit <"$m.created"
	run_mw 0 diff --by type -n 12 "$m.1.snap" "$m.2.snap"
	cp out "$m.types"
	# each type's count of objects, by its name (the last column)
	awk '/^growth by type/ { t = 1; next } t && /^$/ { t = 0 }
	     t && /^ +[0-9]+ +\+/ { print $NF, $(NF - 3) }' "$m.types" >"$m.counts"
	expect_count "$m" pyshop.orders.Entry "$made_orders"
	expect_count "$m" pyshop.audit.Entry "$made_audit"
	expect_grep ' (new|grown) +pyshop\.orders\.Order\.Line$' "$m.types"
	# a class whose __module__ is None: its bare name, no module guessed
	expect_grep ' (new|grown) +Stray$' "$m.types"
	expect_no_grep ' Entry$' "$m.types"
	# no type is named with anything but text
	awk '/^ +[0-9]+ +[-+]/ { print $NF }' "$m.types" >"$m.names"
	LC_ALL=C expect_no_grep '[^ -~]' "$m.names"
	# --focus on the function that makes pyshop.audit's Entry: its row stays,
	# the other Entry's goes
	run_mw 0 diff --by type -n 12 --focus '^note$' "$m.1.snap" "$m.2.snap"
	expect_grep ' (new|grown) +pyshop\.audit\.Entry$' out
	expect_no_grep 'pyshop\.orders\.' out
	run_mw 0 diff --by type -F json -n 12 "$m.1.snap" "$m.2.snap"
	expect_grep '"type": "pyshop\.orders\.Entry"' out
	expect_grep '"type": "pyshop\.audit\.Entry"' out

	kill "$ctl" 2>/dev/null
	wait "$ctl" 2>/dev/null
	end_target "$m"
	finished "$m" "$t"
done

[ "${types_part:-}" = sid ] && finish
# memwatch report: a watched run's page has the table by type (the first
# CPython of the list, fed a line a second while memwatch -p watches it)
v=${cpythons%% *}
py=${v#*=}
rm -f feed.in
mkfifo feed.in
"$py" "$events" 100000 <feed.in >feed.out 2>feed.err &
t=$!
started_pids="$started_pids $t"
(for i in 1 2 3 4 5 6 7 8 9 10; do echo; sleep 1; done) >feed.in &
feeder=$!
started_pids="$started_pids $feeder"
wait_until "grep -q ready feed.out" 30
run_mw 0 -p "$t" -i 200ms -d 6s -q --trigger +8MiB -o feed.log
run_mw 0 report -o feed.html feed.log
expect_grep '<h3>pid [0-9]+: Python objects by type</h3>' feed.html
expect_grep ' (new|grown) +__main__\.Event$' feed.html
wait "$feeder"
wait "$t" || fail "the fed script exited with status $?"
expect_grep '^ok$' feed.out
finish
