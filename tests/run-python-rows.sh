#!/bin/sh
# run-python-rows.sh: one row per stack the user sees. Debian's python3 (3.11)
# watched by memwatch -p while one method of a class grows a dict of small
# tuples and strings on one line: the interpreter reaches the allocator from
# that line by several C paths (the dict's tables, tuples, ints, strings),
# which the report hides. They are one row, in the table and in JSON: the top
# row names the method with its file and line and holds at least 80 % of the
# sampled growth, and no other row shows the same stack. The interpreter's
# frames left out between <module> and the C library's start are said, never
# shown as if <module> were called from __libc_start_call_main. --all-frames
# splits the row again by those paths.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/py-lib.sh"
need_ptrace
need_py311
need_python

script=$top_srcdir/tests/targets/py_rows.py
L=$(grep -n 'LINE:hoard' "$script" | cut -d: -f1)

watch_script hoard "$py" 12
[ "$alive" = yes ] || fail "hoard: python was left stopped or traced"
r=hoard.report
expect_grep "^ +1 +\+[0-9.]+ [KMG]iB .*   Hoard\.hoard_tuples  py_rows\.py:$L  \(via [^)]*frames in python3\.11\)$" $r
# no second row with the same visible stack, told apart by hidden frames
expect_no_grep "^ +([2-9]|[1-9][0-9]+) +[-+].*   Hoard\.hoard_tuples  py_rows\.py:$L( |$)" $r

# bytes N UNIT: N UNIT in bytes (the table's figures)
bytes() {
	awk -v n="$1" -v u="$2" 'BEGIN { m = 1
		if (u == "KiB") m = 1024
		if (u == "MiB") m = 1048576
		if (u == "GiB") m = 1073741824
		printf "%.0f\n", n * m }'
}
# the share of the sampled growth the top row holds, in the table
set -- $(sed -n 's/^change   live heap +\([0-9.]*\) \([KMG]*i*B\),.*/\1 \2/p' $r)
total=$(bytes "${1:-0}" "${2:-B}")
set -- $(sed -n 's/^ *1 *+\([0-9.]*\) \([KMG]*i*B\) .*/\1 \2/p' $r)
top=$(bytes "${1:-0}" "${2:-B}")
echo "table: top row +$top of +$total bytes of sampled growth"
if [ "$total" -le 0 ] || [ $((top * 100)) -lt $((total * 80)) ]; then
	fail "table: the top row holds $top of $total bytes, less than 80 %"
	sed 's/^/  | /' $r >&2
fi
# the rows frames: <module>, then what is hidden, then the C library's start
awk '/^ +1 +\+/ { on = 1 } on && /^ +2 +[-+]/ { exit } on' $r >row1
awk '/  <module>  / { getline; print; exit }' row1 >after-module
expect_grep "^ +\.\.\. [0-9]+ frames in python3\.11 hidden$" after-module

first=$(ls hoard.*.1.snap 2>/dev/null | head -n 1)
last=$(ls hoard.*-final.snap 2>/dev/null | head -n 1)
if [ -z "$first" ] || [ -z "$last" ]; then
	fail "no first or final snapshot"
	finish
fi
for a in "" --all-frames; do
	run_mw 0 diff $a -F json -n 0 "$first" "$last"
	cp out "hoard$a.json"
	"$PYTHON" - "hoard$a.json" "$L" "$a" <<'PY' || fail "diff $a -F json: the rows of Hoard.hoard_tuples are not as expected"
import json, sys
d = json.load(open(sys.argv[1]))
line, all_frames = int(sys.argv[2]), sys.argv[3] != ""
def at_line(r):
    return any(f["function"] == "Hoard.hoard_tuples" and f["line"] == line
               and (f["file"] or "").endswith("py_rows.py") for f in r["frames"])
rows = [r for r in d["grown"] if at_line(r)]
growth = d["growth_bytes"]
print("json%s: %d rows through py_rows.py:%d, the first +%d of +%d bytes" %
      (" --all-frames" if all_frames else "", len(rows), line,
       rows[0]["growth_bytes"] if rows else 0, growth))
if all_frames:
    # the interpreter's paths from the line apart again
    assert len(rows) >= 3, len(rows)
    sys.exit(0)
top = d["grown"][0]
head = top["frames"][top["head"]]
assert head["function"] == "Hoard.hoard_tuples", head
assert head["file"].endswith("py_rows.py") and head["line"] == line, head
assert len(rows) == 1, [r["growth_bytes"] for r in rows]
assert growth > 0 and top["growth_bytes"] >= 0.8 * growth, (top["growth_bytes"], growth)
assert top.get("merged") is True, top.get("merged")
PY
done
finish
