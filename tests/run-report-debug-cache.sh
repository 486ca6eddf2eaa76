#!/bin/sh
# run-report-debug-cache.sh: a target whose debug file keeps its DWARF
# compressed, as Debian's debug packages do. The first report writes a
# decompressed copy named by the build-id into the cache; the next ones read
# it instead (and renew its time), with the same report. A copy of another
# build-id is replaced; copies unused for 14 days, stale temporary files and,
# past the cache's bound, the least recently used copies go when a new copy is
# written; and a cache that cannot be written, or is turned off, changes
# nothing but speed.
. "$top_srcdir/tests/lib.sh"

MKSNAP="$top_builddir/tests/tools/mksnap"
src="$top_srcdir/tests/tools/mksnap.c"
[ -x "$MKSNAP" ] || skip "mksnap not built"
for t in objcopy readelf; do
	command -v $t >/dev/null 2>&1 || skip "$t is not installed"
done
L_helper=$(grep -n "LINE:helper " "$src" | cut -d: -f1)
L_grow=$(grep -n "LINE:grow_call " "$src" | cut -d: -f1)

# the debug file, compressed, where --debug-dir finds it by build-id
mkdir bin
cp "$MKSNAP" bin/mksnap-z
bid=$(readelf -n bin/mksnap-z | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p')
[ -n "$bid" ] || skip "the test target has no build-id"
d1=$(printf '%s' "$bid" | cut -c1-2)
rest=$(printf '%s' "$bid" | cut -c3-)
mkdir -p "dbg/.build-id/$d1"
objcopy --only-keep-debug --compress-debug-sections=zlib bin/mksnap-z \
	"dbg/.build-id/$d1/$rest.debug" || fail "objcopy --only-keep-debug"
objcopy --strip-debug bin/mksnap-z || fail "objcopy --strip-debug"
readelf -SWt "dbg/.build-id/$d1/$rest.debug" > sections.txt
grep -q COMPRESSED sections.txt || skip "objcopy did not compress the debug sections"
bin/mksnap-z -g 10 a.snap || fail "the stripped target could not snapshot itself"

# show_to NAME: show a.snap, check its lines, keep it as NAME.out
show_to() {
	run_mw 0 show --top 3 -D dbg a.snap
	[ -s err ] && fail "$1: stderr: $(head -n 3 err)"
	expect_grep "^ +1 +40\.0 KiB .*  leaky_helper  mksnap\.c:$L_helper \[inlined\]$" out
	expect_grep "^ +grow_site  mksnap\.c:$L_grow$" out
	cp out "$1.out"
}

# no cache: the report libdw makes from the compressed file
export MEMWATCH_DEBUG_CACHE=
show_to plain
[ -e cache ] && fail "MEMWATCH_DEBUG_CACHE set empty made a cache"

export MEMWATCH_DEBUG_CACHE="$tmp/cache/debug"
copy="cache/debug/$bid.debug"
show_to first
[ -f "$copy" ] || fail "no decompressed copy $copy: $(ls -R cache 2>&1 | head -n 5)"
cmp -s plain.out first.out || fail "the report that made the copy differs from the plain one"
readelf -SWt "$copy" > copy.txt 2>&1 || fail "the copy is not an ELF file: $(head -n 2 copy.txt)"
grep -q COMPRESSED copy.txt && fail "the copy still has compressed sections"
grep -q '\.debug_info' copy.txt || fail "the copy has no .debug_info"
[ "$(stat -c %a cache/debug)" = 700 ] || fail "the cache directory is not private: $(stat -c %a cache/debug)"

# the copy is read, and its time renewed, by the next report: with the
# compressed file gone, the lines are still there
mv dbg dbg.away
touch -d '3 days ago' "$copy"
show_to second
cmp -s plain.out second.out || fail "the report from the copy differs from the plain one"
[ "$(find "$copy" -mmin -60)" = "$copy" ] || fail "the copy's time was not renewed"
# and with the binary gone too, the copy stands for it, as the debug file would
mv bin bin.away
show_to nobinary
cmp -s plain.out nobinary.out || fail "the report from the copy without the binary differs"
mv bin.away bin
mv dbg.away dbg

# a copy with another build-id under that name is not used, but replaced
other=$(command -v readelf)
cp "$other" "$copy"
show_to replaced
cmp -s plain.out replaced.out || fail "a wrong copy changed the report"
readelf -SWt "$copy" > copy.txt 2>&1
grep -q '\.debug_info' copy.txt || fail "the wrong copy was not replaced"

# a new copy ages out copies unused for 14 days and old temporary files
old=0123456789abcdef0123456789abcdef01234567
cp "$copy" "cache/debug/$old.debug"
touch -d '15 days ago' "cache/debug/$old.debug"
cp "$copy" "cache/debug/$bid.recent.debug"
touch -d '13 days ago' "cache/debug/$bid.recent.debug"
: > cache/debug/.tmp-AbCdEf
touch -d '2 days ago' cache/debug/.tmp-AbCdEf
rm -f "$copy"
show_to aged
[ -f "$copy" ] || fail "the copy was not made again"
[ -e "cache/debug/$old.debug" ] && fail "a copy unused for 15 days was not removed"
[ -e cache/debug/.tmp-AbCdEf ] && fail "a temporary file of 2 days ago was not removed"
[ -e "cache/debug/$bid.recent.debug" ] || fail "a copy used 13 days ago was removed"

# bounded in size: past the most the copies may hold together (set small
# here), the least recently used go; a file whose copy would take more than a
# quarter of it is not copied (libc's, with libc6-dbg, is not, at this bound)
size=$(stat -c %s "$copy")
cp "$copy" one.debug
rm -f cache/debug/*.debug
i=1
for days in 5 4 3 2; do
	cp one.debug "cache/debug/$i$old.debug"
	touch -d "$days days ago" "cache/debug/$i$old.debug"
	i=$((i + 1))
done
export MEMWATCH_TEST_DEBUG_CACHE_MAX=$((size * 9 / 2))
show_to bounded
[ -f "$copy" ] || fail "the copy was not made within the bound"
[ -e "cache/debug/1$old.debug" ] && fail "the least recently used copy was not removed past the bound"
for i in 2 3 4; do
	[ -e "cache/debug/$i$old.debug" ] || fail "copy $i was removed, though the bound was met without it"
done
rm -f "$copy"
export MEMWATCH_TEST_DEBUG_CACHE_MAX=$((size * 3))
show_to toobig
[ -e "$copy" ] && fail "a copy of over a quarter of the bound was made"
cmp -s plain.out toobig.out || fail "a file too big to copy changed the report"
unset MEMWATCH_TEST_DEBUG_CACHE_MAX

# a cache that cannot be made: the same report, nothing said
: > notadir
export MEMWATCH_DEBUG_CACHE="$tmp/notadir/debug"
show_to unwritable
cmp -s plain.out unwritable.out || fail "an unwritable cache changed the report"
finish
