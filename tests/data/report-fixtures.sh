#!/bin/sh
# report-fixtures.sh: how the committed report fixtures were made. Not run by
# make check; run it by hand (from any directory, with a configured build tree)
# only to remake them, then review the new expected output before committing.
#
#   tests/data/report-fixtures.sh BUILDDIR
#
# It builds tests/tools/mksnap once, -O2 -g, with source paths made relative,
# splits its debug info off (objcopy --only-keep-debug), strips it, and lays the
# pair out by build-id under tests/data/debug/.build-id/xx/ as the debug
# directories of /usr/lib/debug are (the stripped binary as "rest", its debug
# file as "rest.debug"). The stripped binary then runs from a scratch directory
# and snapshots itself, keeping only its own frames (-m) so that the output does
# not depend on the C library of the machine the tests run on:
#   report_a.snap   mksnap -m -g 10 -s 5 -k 3
#   report_b.snap   mksnap -m -g 30 -s 5 -k 1
# Finally the expected outputs (report_*.expected) are written by the memwatch
# of BUILDDIR; tests/run-report-golden.sh compares against them.
set -eu
build=$(cd "${1:?usage: report-fixtures.sh BUILDDIR}" && pwd)
data=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$data/../.." && pwd)
scratch=/tmp/memwatch-golden
rm -rf "$scratch"
mkdir -p "$scratch"

cd "$top"
${CC:-gcc} -O2 -g -fno-omit-frame-pointer -fdebug-prefix-map="$top"=. \
	-I"$build" -I src -I snapshot -DPKGLIBDIR=\"/\" -DPKGDATADIR=\"/\" -o "$scratch/report_golden" \
	tests/tools/mksnap.c snapshot/snapshot.c snapshot/snapio.c src/util.c src/symbolize.c \
	$(pkg-config --cflags --libs libdw libelf libdebuginfod) -lz -lstdc++ -lm -ldl
objcopy --only-keep-debug "$scratch/report_golden" "$scratch/report_golden.debug"
strip --strip-all "$scratch/report_golden"
objcopy --add-gnu-debuglink="$scratch/report_golden.debug" "$scratch/report_golden"
id=$(readelf -n "$scratch/report_golden" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
rm -rf "$data/debug"
mkdir -p "$data/debug/.build-id/$(echo "$id" | cut -c1-2)"
rest=$(echo "$id" | cut -c3-)
cp "$scratch/report_golden" "$data/debug/.build-id/$(echo "$id" | cut -c1-2)/$rest"
cp "$scratch/report_golden.debug" "$data/debug/.build-id/$(echo "$id" | cut -c1-2)/$rest.debug"

cd "$scratch"
./report_golden -m -g 10 -s 5 -k 3 report_a.snap
./report_golden -m -g 30 -s 5 -k 1 report_b.snap
cp report_a.snap report_b.snap "$data/"
cd /
rm -rf "$scratch"   # the recorded path must not exist when the output is made

# the expected outputs, made as the test makes them: relative snapshot names
cd "$data"
unset DEBUGINFOD_URLS
mw="$build/memwatch"
dd="$data/debug"
"$mw" show -D "$dd" report_a.snap > report_show.expected
"$mw" show report_a.snap > report_show_nodebug.expected
"$mw" show -D "$dd" -F json report_a.snap > report_show_json.expected
"$mw" show -D "$dd" -F folded --by line report_a.snap > report_show_folded_line.expected
"$mw" diff -D "$dd" report_a.snap report_b.snap > report_diff.expected
"$mw" diff -D "$dd" -F json report_a.snap report_b.snap > report_diff_json.expected
"$mw" diff -D "$dd" -F folded report_a.snap report_b.snap > report_diff_folded.expected
"$mw" diff -D "$dd" --by function --depth 1 report_a.snap report_b.snap > report_diff_function.expected
echo "fixtures remade for build-id $id; review: git diff $data"
