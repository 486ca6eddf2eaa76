#!/bin/sh
# run-robust-snapfiles.sh: broken snapshots given to memwatch show and diff, in
# either place of a diff: empty, cut short, one bit flipped, counts and lengths
# far beyond the file (with a valid checksum, so the decoder itself must refuse
# them, without trying to allocate for them), a version too new and version 0.
# Each is one line naming the file and the fault, exit status 3, nothing on
# standard output, and no report file: an existing one (-o, else replaced
# atomically) is left as it was.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/robust-lib.sh"
need_python

cp "$top_srcdir/tests/fuzz/corpus/snapshot/valid-rich.snap" good.snap
chmod u+w good.snap

# mkbad.py SRC KIND DST: a copy of SRC with one field changed and the CRC-32
# trailer made right again (memwatch-snapshot(5)).
cat >mkbad.py <<'PY'
import struct, sys, zlib
src, kind, dst = sys.argv[1:4]
b = bytearray(open(src, 'rb').read())[:-4]
def varint(v):
    o = bytearray()
    while True:
        c, v = v & 0x7f, v >> 7
        o.append(c | 0x80 if v else c)
        if not v:
            return bytes(o)
def skipvar(off):
    while b[off] & 0x80:
        off += 1
    return off + 1
if kind.startswith('version='):
    struct.pack_into('<H', b, 8, int(kind[8:]))
else:
    off = 16
    for _ in range(struct.unpack_from('<I', b, 12)[0]):
        t, fl, ln = struct.unpack_from('<IIQ', b, off)
        if kind == 'modules' and t == 3:
            struct.pack_into('<I', b, off + 16, 0xfffffff0)
        elif kind == 'stacks' and t == 4:
            payload = varint(1 << 60) + bytes(b[skipvar(off + 16):off + 16 + ln])
            b[off:off + 16 + ln] = struct.pack('<IIQ', t, fl, len(payload)) + payload
            break
        elif kind == 'length' and t == 4:
            struct.pack_into('<Q', b, off + 8, 1 << 62)
            break
        off += 16 + ln
b += struct.pack('<I', zlib.crc32(bytes(b)) & 0xffffffff)
open(dst, 'wb').write(b)
PY
for k in modules stacks length version=9 version=0; do
	"$PYTHON" mkbad.py good.snap "$k" "bad-$k.snap" || fail "mkbad.py $k failed"
done
: >empty.snap
size=$(wc -c <good.snap)
head -c $((size / 2)) good.snap >cut.snap
cp good.snap flip.snap
# one bit flipped in the middle of the stacks
printf '\040' | dd of=flip.snap bs=1 seek=$((size - 60)) conv=notrunc 2>/dev/null
cmp -s good.snap flip.snap && fail "the flipped copy is the same"

# the sound file reports, so a refusal below is the broken file's doing
run_mw 0 show good.snap
echo 'an earlier report' >kept.txt

# check FILE PATTERN: show and diff (FILE first and second) refuse FILE.
check() {
	local f=$1 pat=$2
	run_mw 3 show "$f"
	expect_err_line "'$f': $pat"
	[ -s out ] && fail "show $f printed a report"
	run_mw 3 show -o kept.txt "$f"
	expect_err_line "'$f': $pat"
	run_mw 3 show -E embedded.snap "$f"
	expect_err_line "'$f': $pat"
	[ -e embedded.snap ] && fail "show -E of $f wrote a copy"
	run_mw 3 diff "$f" good.snap
	expect_err_line "'$f': $pat"
	[ -s out ] && fail "diff $f good.snap printed a report"
	run_mw 3 diff -o kept.txt -F json good.snap "$f"
	expect_err_line "'$f': $pat"
	[ "$(cat kept.txt)" = 'an earlier report' ] || fail "a refused $f changed kept.txt"
	no_temp_files "$f"
}
check empty.snap 'empty file'
check cut.snap 'truncated at byte'
check flip.snap 'checksum mismatch \(file corrupted\)$'
check bad-modules.snap "section 'modules': 4294967280 modules cannot fit"
check bad-stacks.snap "section 'stacks': 1152921504606846976 stacks cannot fit"
check bad-length.snap 'section at byte [0-9]+ declares 4611686018427387904 bytes, only [0-9]+ remain'
check bad-version=9.snap 'format version 9 is newer than this memwatch reads'
check bad-version=0.snap "format version 0 at byte 8 is not valid"
finish
