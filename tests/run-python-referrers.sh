#!/bin/sh
# run-python-referrers.sh: memwatch snap --referrers, on every CPython the
# agent reads that is installed (Debian's python3 and python3.11-dbg, and 3.8
# to 3.13: pyenv's builds; a missing one is said and skipped). py_refs.py
# keeps instances of Event in a module-level list (AUDIT_LOG) and instances
# of Session in a dict that is a class attribute (Registry.sessions): the
# chains name both roots, the index or key, and the type kept; the attribute
# of an instance and the __slots__ member of another that hold the objects
# (Session.hits, Mark.seen) on every version; and (its cache
# mode) objects kept by a functools.lru_cache and by a dict a closure holds:
# the chains name the functions; (its local mode) objects kept by a local
# variable of a running function: the chain names both; the search
# says how long Python waited and how many objects it traversed; show (by
# type and by stack) prints the chains under their rows, JSON carries them;
# a forward view says what one object of a top type holds; the script runs
# on and ends well. A snapshot without --referrers has no search. A watch with
# --referrers logs the pause of its final snapshot's search, and its HTML
# page lists the chains.
# Some 90 s alone, up to 200 s beside a whole suite on a 2-core machine.
# limit: 600
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
readable_cpythons
[ -n "$cpythons" ] || skip "no CPython 3.8 to 3.15 is installed"
refs=$top_srcdir/tests/targets/py_refs.py

# the searches' time limit: one that a loaded machine does not reach before
# the search is done (run-python-referrers-bound.sh tests the limit itself;
# 1 s, the default, was reached with two suites side by side)
limit=10s
for v in $cpythons; do
	name=${v%%=*} py=${v#*=}
	echo "$name: $py"
	name=$(echo "$name" | tr -c 'a-z0-9\n' '_')
	start_script "$name" "$py" "$refs" 50000 || continue
	# the agent in, then a capture held meanwhile
	run_mw 0 snap -p "$t" -w 1 -o "$name.0.snap"
	start_ctl "$name.ctl" "$t" start=16384 sleep=120000
	python_state "$t" on
	step "$name"
	wait_until "[ \$(grep -c '^created' $name.out) -ge 1 ]" 60
	run_mw 0 snap -p "$t" -w 0 --referrers --referrers-limit "$limit" -o "$name.snap"
	cp out "$name.snap.out"
	expect_grep "^pid $t: referrers: Python held [0-9.]+ m?s, [0-9]+ objects traversed in [0-9]+ pass(es)? \\([0-9]+ tracked\\)" "$name.snap.out"
	# the module global and the class attribute, each with the object it
	# holds (3.8 to 3.10 give each instance a __dict__ of its own, which may
	# be the target: the chain then goes on through the instance)
	expect_grep "kept alive by: __main__\\.AUDIT_LOG \\(list\\) -> \\[[0-9]+\\] (-> __main__\\.Event$|\\(__main__\\.Event\\))" "$name.snap.out"
	expect_grep "kept alive by: __main__\\.Registry\\.sessions \\(dict\\) -> \\['s[0-9]+'\\] (-> __main__\\.Session$|\\(__main__\\.Session\\))" "$name.snap.out"
	expect_grep "^  one [A-Za-z_.]+ \\([0-9.]+ [KMG]?i?B\\) holds: [0-9]+ " "$name.snap.out"
	# an instance's attribute (3.11 on kept in its values, no __dict__
	# made; before, through its __dict__) and a __slots__ member, each
	# named: never only the type of what it holds (the sets, the largest
	# objects, are always among the top types searched: their chains go
	# through both; the lists, ints and Marks a Session holds are some
	# of the time)
	expect_grep "kept alive by: __main__\\.Registry\\.sessions \\(dict\\) -> \\['s[0-9]+'\\] \\(__main__\\.Session\\) -> \\.(hits -> list|user -> int|mark -> __main__\\.Mark|mark \\(__main__\\.Mark\\) -> )" "$name.snap.out"
	expect_grep "kept alive by: __main__\\.Registry\\.sessions \\(dict\\) -> \\['s[0-9]+'\\] \\(__main__\\.Session\\) -> \\.mark \\(__main__\\.Mark\\) -> \\.seen -> set$" "$name.snap.out"
	expect_no_grep "\\(__main__\\.(Session|Mark)\\) -> ([a-z(]|__main__)" "$name.snap.out"

	run_mw 0 show --by type -n 10 "$name.snap"
	cp out "$name.show"
	expect_grep '^  referrers searched: [0-9]+ chains?, Python held ' "$name.show"
	expect_grep '^ +kept alive by: __main__\.(AUDIT_LOG|Registry\.sessions) ' "$name.show"
	run_mw 0 show -n 10 "$name.snap"
	expect_grep '^ +kept alive by: __main__\.(AUDIT_LOG|Registry\.sessions) ' out
	run_mw 0 show --by type -F json -n 10 "$name.snap"
	expect_grep '"kept_alive_by": \["__main__\.(AUDIT_LOG|Registry\.sessions) ' out
	expect_grep '"referrers": \{"status": "done", ' out

	# without the option: no search, no chain
	run_mw 0 snap -p "$t" -w 0 -o "$name.plain.snap"
	expect_no_grep 'referrers' out
	run_mw 0 show --by type -n 10 "$name.plain.snap"
	expect_no_grep 'kept alive by|referrers' out

	kill "$ctl" 2>/dev/null
	wait "$ctl" 2>/dev/null
	end_target "$name"
	finished "$name" "$t"

	# caches: Entry objects kept by a functools.lru_cache, Memo objects in
	# a dict a closure holds: the chains name the functions
	start_script "${name}_c" "$py" "$refs" 30000 cache || continue
	run_mw 0 snap -p "$t" -w 1 -o "$name.c0.snap"
	start_ctl "$name.cctl" "$t" start=16384 sleep=120000
	python_state "$t" on
	step "${name}_c"
	wait_until "[ \$(grep -c '^created' ${name}_c.out) -ge 1 ]" 60
	run_mw 0 snap -p "$t" -w 0 --referrers --referrers-limit "$limit" -o "$name.c.snap"
	cp out "$name.c.snap.out"
	expect_grep "kept alive by: __main__\\.lookup \\((functools\\.)?_lru_cache_wrapper\\) -> \\(dict\\) -> " "$name.c.snap.out"
	expect_grep "kept alive by: __main__\\.remember \\(function\\) -> .* \\(cell\\) -> \\(dict\\) -> \\['m[0-9]+'\\] " "$name.c.snap.out"
	kill "$ctl" 2>/dev/null
	wait "$ctl" 2>/dev/null
	end_target "${name}_c"
	finished "${name}_c" "$t"

	# a local variable of a running function (its frame is no object the
	# collector tracks): the chain names it and the function
	start_script "${name}_l" "$py" "$refs" 30000 local || continue
	run_mw 0 snap -p "$t" -w 1 -o "$name.l0.snap"
	start_ctl "$name.lctl" "$t" start=16384 sleep=120000
	python_state "$t" on
	step "${name}_l"
	wait_until "[ \$(grep -c '^created' ${name}_l.out) -ge 1 ]" 60
	run_mw 0 snap -p "$t" -w 0 --referrers --referrers-limit "$limit" -o "$name.l.snap"
	expect_grep "kept alive by: local pending of serve\\(\\) \\(list\\) -> \\[[0-9]+\\] (-> __main__\\.Event$|\\(__main__\\.Event\\))" out
	kill "$ctl" 2>/dev/null
	wait "$ctl" 2>/dev/null
	end_target "${name}_l"
	finished "${name}_l" "$t"
done

# a watch with --referrers: its final snapshot's search, the pause in the
# run log, and the chains in the HTML page (the first CPython of the list)
v=${cpythons%% *}
py=${v#*=}
start_script feed "$py" "$refs" 20000 || finish
(for i in 1 2 3 4 5; do echo; sleep 0.5; done) >feed.in &
feeder=$!
started_pids="$started_pids $feeder"
run_mw 0 -p "$t" -i 200ms -d 4s -q --capture now --referrers -o feed.log
expect_grep "^# event [0-9.]+ $t referrers status=done pause-ms=[0-9.]+ visited=[0-9]+ tracked=[0-9]+ passes=[0-9]+ chains=[1-9]" feed.log
run_mw 0 report -o feed.html feed.log
expect_grep "^<h3>pid $t: what keeps Python objects alive</h3>" feed.html
expect_grep "kept alive by: <code>__main__\.(AUDIT_LOG|Registry\.sessions) " feed.html
wait "$feeder"
end_target feed
finished feed "$t"

# a process that is not CPython: the snapshot says there is nothing to search
sleep 300 &
nopy=$!
started_pids="$started_pids $nopy"
run_mw 0 snap -p "$nopy" -w 1 --referrers -o nopy.snap
expect_grep "^pid $nopy: referrers not searched: no CPython in this process" out
kill "$nopy"
wait "$nopy" 2>/dev/null

# bad values: one line, status 2
run_mw 2 snap -p $$ --referrers --referrers-limit 0 -o never.snap
expect_grep '^memwatch: .*referrers-limit' err
run_mw 2 snap -p $$ --referrers --referrers-objects 12x -o never.snap
expect_grep '^memwatch: .*referrers-objects' err
finish
