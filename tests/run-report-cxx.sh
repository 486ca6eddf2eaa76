#!/bin/sh
# run-report-cxx.sh: a C++ target under the agent: names are demangled
# (shop::Cache::store(int)), operator new is trimmed from the top, and a row is
# headed by the user's own frame: Registry::add, an inlined helper whose block
# comes from six std::vector frames inlined into it, not those frames. One line
# of Cache::store allocates by two paths that differ only in frames the report
# hides (operator new straight from it; std::vector's growth through std::
# frames): they are one row in every format, and --all-frames splits them.
. "$top_srcdir/tests/lib.sh"

[ -f "$MEMWATCH_AGENT" ] || skip "the agent is not built ($MEMWATCH_AGENT)"
CXX=${CXX:-g++}
command -v "$CXX" >/dev/null 2>&1 || skip "no C++ compiler ($CXX)"
src="$top_srcdir/tests/targets/report_cxx.cc"
"$CXX" -O2 -g -fno-omit-frame-pointer -o report_cxx "$src" || skip "$CXX cannot build report_cxx.cc"
unset DEBUGINFOD_URLS
L_store=$(grep -n "LINE:store" "$src" | cut -d: -f1)
L_add=$(grep -n "LINE:add" "$src" | cut -d: -f1)
# the vector's construction is placed on its statement's line or the next
L_adds="($L_add|$((L_add + 1)))"
L_open=$(grep -n "LINE:open" "$src" | cut -d: -f1)

LD_PRELOAD="$MEMWATCH_AGENT" MEMWATCH_AGENT_OPTIONS=capture=now,rate=1 \
	start_target ./report_cxx >target.out
wait_until "grep -q ready target.out" 30 || finish
run_mw 0 snap -p "$target_pid" -o a.snap

run_mw 0 show a.snap
# 200 vectors of 2048 bytes: the first line is the user's function, the std::
# frames are counted, and the next line is its caller
expect_grep "^ +1 +400 KiB .* +200 +200   Registry::add\(int\)  report_cxx\.cc:$L_adds \[inlined\]  \(via [0-9]+ std:: frames\)$" out
expect_grep "^ +open_sessions\(Registry&, int\)  report_cxx\.cc:$L_open$" out
# the 20 Items and the vector's last buffer (32 pointers): one row, the
# std:: frames of the one path counted in its via
expect_grep "^ +2 +78\.4 KiB .* +21 +21   shop::Cache::store\(int\)  report_cxx\.cc:$L_store  \(via up to [0-9]+ std:: frames\)$" out
expect_no_grep "^ +[0-9]+ .* [0-9]+   shop::Cache::store.*\(via [0-9]+ std:: frames\)$" out
expect_no_grep "^ +[0-9]+ .* [0-9]+  operator new" out
expect_no_grep "^ +[0-9]+ .* [0-9]+   (void )?std::" out
# the same by function; every frame with --all-frames; names elided in tables
run_mw 0 show --by function a.snap
expect_grep "^ +1 +40[0-9] KiB .*   Registry::add\(int\)  \(report_cxx\)  \(via up to [0-9]+ std:: frames\)$" out
run_mw 0 show --all-frames --depth 0 --top 1 a.snap
expect_grep "^ +1 +400 KiB .*   std::__new_allocator<…>::allocate\(" out
expect_grep "^ +Registry::add\(int\)  report_cxx\.cc:$L_adds \[inlined\]$" out
run_mw 0 show --all-frames --full-names --top 1 a.snap
expect_grep "^ +1 +400 KiB .*   std::__new_allocator<char>::allocate\(" out
# --hide: the user says what is not theirs; --focus keeps the rows through a frame
run_mw 0 show --hide '^Registry::' --top 1 a.snap
# both lines of the hidden Registry::add are one row under open_sessions
expect_grep "^ +1 +408 KiB .* +401 +401   open_sessions\(Registry&, int\)  report_cxx\.cc:$L_open  \(via [0-9]+-[0-9]+ frames in report_cxx\)$" out
run_mw 0 show --focus 'Cache::store' a.snap
expect_grep "shop::Cache::store\(int\)" out
expect_no_grep "Registry::add" out
run_mw 2 show --focus '(' a.snap
expect_err_line "show: invalid --focus '\(': "
# JSON keeps every frame and says which one heads the row
run_mw 0 show -F json a.snap
if need_python; then
	"$PYTHON" - out <<'PY' || fail "show json: the row's head is not the user's frame"
import json, sys
row = json.load(open(sys.argv[1]))["rows"][0]
assert row["frames"][0]["function"].startswith("std::"), row["frames"][0]
assert row["frames"][row["head"]]["function"] == "Registry::add(int)", row["head"]
PY
fi
run_mw 0 show -F folded a.snap
expect_grep ';main;shop::Cache::store\(int\) 80256$' out
expect_no_grep ';shop::Cache::store\(int\);' out
# --all-frames: the two paths apart again, in the table, folded and JSON
run_mw 0 show --all-frames --depth 0 a.snap
expect_grep "^ +[0-9]+ +78\.1 KiB .* +20 +20   shop::Cache::store\(int\)  report_cxx\.cc:$L_store$" out
expect_grep "^ +[0-9]+ +256 B .* +1 +1   std::" out
run_mw 0 show --all-frames -F folded a.snap
expect_grep ';main;shop::Cache::store\(int\) 80000$' out
expect_grep ';main;shop::Cache::store\(int\);std::.* 256$' out
if need_python; then
	for a in "" --all-frames; do
		run_mw 0 show $a -F json a.snap
		"$PYTHON" - out "$a" <<'PY' || fail "show $a -F json: Cache::store's rows are not as expected"
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"]
        if any(f["function"] == "shop::Cache::store(int)" for f in r["frames"])]
got = sorted((r["live_bytes"], r["live_blocks"], r.get("merged")) for r in rows)
want = [(256, 1, False), (80000, 20, False)] if sys.argv[2] else [(80256, 21, True)]
assert got == want, got
if not sys.argv[2]:
    # the merged row's frames are those both paths share: none of std::
    r = rows[0]
    assert r["frames"][r["head"]]["function"] == "shop::Cache::store(int)", r
    assert not any(f["function"].startswith("std::") for f in r["frames"]), r["frames"]
PY
	done
fi
finish
