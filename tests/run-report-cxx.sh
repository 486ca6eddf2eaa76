#!/bin/sh
# run-report-cxx.sh: a C++ target under the agent: names are demangled
# (shop::Cache::store(int)) and operator new is trimmed from the top.
. "$top_srcdir/tests/lib.sh"

[ -f "$MEMWATCH_AGENT" ] || skip "the agent is not built ($MEMWATCH_AGENT)"
CXX=${CXX:-g++}
command -v "$CXX" >/dev/null 2>&1 || skip "no C++ compiler ($CXX)"
src="$top_srcdir/tests/targets/report_cxx.cc"
"$CXX" -O2 -g -fno-omit-frame-pointer -o report_cxx "$src" || skip "$CXX cannot build report_cxx.cc"
unset DEBUGINFOD_URLS
L_store=$(grep -n "LINE:store" "$src" | cut -d: -f1)

LD_PRELOAD="$MEMWATCH_AGENT" MEMWATCH_AGENT_OPTIONS=capture=now,rate=1 \
	start_target ./report_cxx >target.out
wait_until "grep -q ready target.out" 30 || finish
run_mw 0 snap -p "$target_pid" -o a.snap

run_mw 0 show a.snap
expect_grep "^ +1 +78\.1 KiB .* +20 +20   shop::Cache::store\(int\)  report_cxx\.cc:$L_store$" out
expect_no_grep "^ +[0-9]+ .* [0-9]+  operator new" out
run_mw 0 show -F folded a.snap
expect_grep ';main;shop::Cache::store\(int\) 80000$' out
finish
