#!/bin/sh
# make-snapshot-corpus.sh: (re)build the seed corpus of fuzz_snapshot in
# tests/fuzz/corpus/snapshot/ with snapdump --from-text: a few valid snapshots (one
# with a stack of every kind, and the regions, types and referrers sections) and
# a few broken ones (cut, bit-flipped, newer version, unknown section, not a
# snapshot). The fuzz target repairs the checksum itself, so broken seeds with a
# stale CRC still reach the section parsers.
#   tests/fuzz/make-snapshot-corpus.sh BUILDDIR/tests/tools/snapdump
set -eu
snapdump=$1
out=$(cd "$(dirname "$0")" && pwd)/corpus/snapshot
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/empty.txt" <<'T'
sample_rate 1
T
cat >"$tmp/small.txt" <<'T'
pid 12
exe "/bin/t"
cmdline "t"
sample_rate 524288
max_depth 64
module 0 bias=0x555555554000 lo=0x555555554000 hi=0x555555559000 build_id=00112233445566778899aabbccddeeff00112233 path="/bin/t"
stack 0 live_bytes=1048576 live_blocks=2 live_samples=2 alloc_bytes=2097152 alloc_blocks=4 flags=0x0
  0:0x1139
  0:0x1180
T
cat >"$tmp/rich.txt" <<'T'
pid 4242
exe "/usr/bin/grower"
cmdline "grower --rate \"fast\""
time_ns 1763770000123456789
capture_start_ns 1763769000000000000
sample_rate 524288
max_depth 128
rss_bytes 104857600
dropped_stacks 3
dropped_bytes 12345
mallinfo arena=135168 mmapped=0 in_use=98304 free_bytes=36864 releasable=36000
module 0 bias=0x555555554000 lo=0x555555554000 hi=0x555555559000 build_id=0123456789abcdef0123456789abcdef01234567 path="/usr/bin/grower"
module 1 bias=0x7ffff7c00000 lo=0x7ffff7c28000 hi=0x7ffff7e1d000 build_id=- path="/lib/x86_64-linux-gnu/libc.so.6"
module 2 bias=0x7ffff7fc3000 lo=0x7ffff7fc3000 hi=0x7ffff7fff000 build_id=ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff path=""
stack 0 live_bytes=1048576 live_blocks=1024 live_samples=2 alloc_bytes=2097152 alloc_blocks=2048 flags=0x0
  0:0x1234
  0:0x1300
  1:0x29d90
  1:0x29e40
  0:0x1025
stack 1 live_bytes=18446744073709551615 live_blocks=1 live_samples=1 alloc_bytes=10 alloc_blocks=1 flags=0x1
  -:0x7fffdeadbeef
  2:0x0
stack 2 live_bytes=0 live_blocks=0 live_samples=0 alloc_bytes=0 alloc_blocks=0 flags=0x0
symbol 0:0x1234 nframes=2
  function="grow_inner" file="grow.c" line=12
  function="grow" file=- line=0
symbol -:0x7fffdeadbeef nframes=1
  function=- file=- line=0
regions 4
region kind=1 mappings=1 size=8388608 rss=4194304 anon=4194304 swap=0 name=-
region kind=6 mappings=5 size=2097152 rss=1482752 anon=24576 swap=0 name="/lib/x86_64-linux-gnu/libc.so.6"
region kind=4 mappings=2 size=65536 rss=4096 anon=4096 swap=8192 name="[anon:pool \"a\"]"
region kind=42 mappings=1 size=4096 rss=0 anon=0 swap=0 name=-
type 0 name="__main__.Event"
type 1 name="<not an object>"
type 2 name="collections.OrderedDict"
typed stack=0 type=0 samples=1 bytes=524288 blocks=512
typed stack=0 type=1 samples=1 bytes=524288 blocks=512
typed stack=2 type=2 samples=0 bytes=0 blocks=0
refsearch status=1 limit_ns=1000000000 max_objects=50000000 pause_ns=1000123456 visited=20000000 tracked=10000000 passes=2 note="the time limit was reached after 2 passes"
chain type=0 stack=0 end=0
  edge="__main__.AUDIT_LOG" type="list"
  edge="[3]" type="Event"
chain type=2 stack=2 end=1
  edge=- type="dict"
  edge="['k\"1']" type="collections.OrderedDict"
chain type=0 stack=0 end=7
  edge=- type=-
forward type=0 bytes=56
  type="dict" count=1 bytes=1168
  type="str" count=2 bytes=120
forward type=2 bytes=0
T
# one stack of each kind (flags: malloc 0, mmap 0x2, brk 0x6, file 0xa), and
# the combinations a reader must still name: truncated mmap 0x3, brk and file
# bits both set 0xe (brk), a brk bit without the mapping bit 0x4 (malloc)
cat >"$tmp/kinds.txt" <<'T'
pid 77
exe "/bin/k"
cmdline "k"
sample_rate 1
max_depth 64
module 0 bias=0x400000 lo=0x400000 hi=0x401000 build_id=- path="/bin/k"
stack 0 live_bytes=64 live_blocks=1 live_samples=1 alloc_bytes=64 alloc_blocks=1 flags=0x0
  0:0x100
stack 1 live_bytes=8388608 live_blocks=1 live_samples=1 alloc_bytes=8388608 alloc_blocks=1 flags=0x2
  0:0x110
stack 2 live_bytes=2097152 live_blocks=1 live_samples=1 alloc_bytes=3145728 alloc_blocks=1 flags=0x6
  0:0x120
stack 3 live_bytes=1048576 live_blocks=1 live_samples=1 alloc_bytes=1048576 alloc_blocks=1 flags=0xa
  0:0x130
stack 4 live_bytes=4096 live_blocks=1 live_samples=1 alloc_bytes=4096 alloc_blocks=1 flags=0x3
  0:0x140
stack 5 live_bytes=4096 live_blocks=1 live_samples=1 alloc_bytes=4096 alloc_blocks=1 flags=0xe
  0:0x150
stack 6 live_bytes=4096 live_blocks=1 live_samples=1 alloc_bytes=4096 alloc_blocks=1 flags=0x4
  0:0x160
regions 2
region kind=1 mappings=1 size=4194304 rss=3145728 anon=3145728 swap=0 name=-
region kind=7 mappings=1 size=1048576 rss=1048576 anon=0 swap=0 name="/memfd:k (deleted)"
T
for t in empty small rich kinds; do
	"$snapdump" --from-text "$tmp/$t.txt" "$out/valid-$t.snap"
done

rich=$out/valid-rich.snap
size=$(wc -c <"$rich")
head -c $((size / 2)) "$rich" >"$out/broken-cut-half.snap"
head -c $((size - 1)) "$rich" >"$out/broken-cut-trailer.snap"
head -c 20 "$rich" >"$out/broken-cut-header.snap"
# a bit flipped in the middle (the checksum no longer matches)
cp "$rich" "$out/broken-bitflip.snap"
printf '\377' | dd of="$out/broken-bitflip.snap" bs=1 seek=$((size / 3)) conv=notrunc 2>/dev/null
# format version 2
cp "$rich" "$out/broken-version.snap"
printf '\002' | dd of="$out/broken-version.snap" bs=1 seek=8 conv=notrunc 2>/dev/null
# an unknown section (type 99, 5 bytes) before the others, section count + 1,
# with the CRC-32 made right again (gzip's trailer holds the CRC-32 of its input,
# little-endian, as the .snap trailer does)
small=$out/valid-small.snap
ssize=$(wc -c <"$small")
{
	head -c 12 "$small"
	printf '\004\000\000\000'
	printf '\143\000\000\000\000\000\000\000\005\000\000\000\000\000\000\000hello'
	tail -c +17 "$small" | head -c $((ssize - 16 - 4))
} >"$tmp/unknown-body"
{
	cat "$tmp/unknown-body"
	gzip -c <"$tmp/unknown-body" | tail -c 8 | head -c 4
} >"$out/valid-unknown-section.snap"
rm -f "$out/unknown-section.snap"
printf '# memwatch run.log version 1\n' >"$out/broken-not-snapshot.snap"
: >"$out/broken-empty.snap"
ls "$out"
