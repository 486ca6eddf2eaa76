#!/bin/sh
# run-capture-cgo.sh: a Go program that leaks through cgo (C.malloc in a C
# function of its preamble), built here, offline, with Debian's golang-go.
# memwatch run preloads the agent: the C function is the top row, and one
# line says that the Go heap is not seen, with Go's heap profiler as the
# hint. -p refuses in one true line (no injection into Go's runtime) with
# memwatch run as the hint, and its watch still ends with the RSS story.
. "$top_srcdir/tests/lib.sh"
need_ptrace
go_build "$top_srcdir/tests/targets/cgo_leak.go" 1 "$tmp/cgo_target"
leak_line=$(grep -n 'char \*p = malloc(n);' "$top_srcdir/tests/targets/cgo_leak.go" | cut -d: -f1)

# 1. memwatch run: its C allocations sampled
"$MEMWATCH" run -i 200ms -o a.log -- "$tmp/cgo_target" "$tmp/a.stop" >a.out 2>a.err &
mw=$!
started_pids="$started_pids $mw"
wait_until "[ \$(grep -c ' snapshot path=' a.log 2>/dev/null) -ge 2 ]" 60
: >"$tmp/a.stop"
wait "$mw"
st=$?
[ "$st" -eq 0 ] || { fail "run: exit status $st"; sed 's/^/  stderr: /' a.err >&2; }
expect_grep "^memwatch: warning: '$tmp/cgo_target' is a Go program with cgo \(dynamically linked\): Go allocates its own objects from its own heap, which the agent does not see: its C code's allocations \(cgo\) are sampled$" a.err
expect_grep "^  hint: for the Go heap, use Go's heap profiler, runtime/pprof" a.err
row=$(awk '/^ +1 / { print; exit }' a.out)
case $row in
*" remember_order  main.go:$leak_line"*) ;;
*) fail "run: the top row is not remember_order main.go:$leak_line: '$row'"
   sed 's/^/  out: /' a.out >&2 ;;
esac

# 2. -p: refused in one line, and the RSS story at the end of the watch
"$tmp/cgo_target" "$tmp/b.stop" >b.out 2>b.err &
pid=$!
started_pids="$started_pids $pid"
wait_until "grep -q '^ready' b.out" 30
run_mw 0 -p "$pid" -i 200ms -d 2s --capture now -o b.log
expect_grep "^memwatch: pid $pid: cannot attach: the process is a Go program with cgo \(dynamically linked\): the agent is not injected into Go's runtime, which owns its threads and signals$" err
expect_grep "^  hint: start it with memwatch run -- PROGRAM to sample its C \(cgo\) allocations; for the Go heap, use Go's heap profiler, runtime/pprof" err
expect_grep "^memwatch: pid $pid: its allocations were not sampled \(the process is a Go program with cgo .*\); from /proc: RSS [0-9.]+ [KMG]iB -> [0-9.]+ [KMG]iB \(\+[0-9.]+ [KMG]?i?B\) over [0-9.]+ s, peak [0-9.]+ [KMG]iB; at the end anon " out
expect_no_grep "libmemwatch-agent" "/proc/$pid/maps"
: >"$tmp/b.stop"
wait "$pid"
finish
