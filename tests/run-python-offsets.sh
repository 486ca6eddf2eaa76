#!/bin/sh
# run-python-offsets.sh: the CPython 3.11 structure offsets the agent reads
# (mirrored in src/agent/pyframes.h, pytypes.c and python.c, not compiled against them) match the
# interpreter's own internal headers, where they are installed: the release
# build's (libpython3.11-dev) and the debug build's (Py_DEBUG, libpython3.11-dbg),
# which the agent reads at the same offsets. And from 3.13 on, each entry of
# src/agent/pyversions.h (where _Py_DebugOffsets holds the offsets the agent
# reads, and what it does not publish) against that version's headers: 3.13's
# (a pyenv build), 3.14's and 3.15's in the sid root. And those
# of 3.8, 3.9, 3.10 and 3.12, against their headers where installed (pyenv).
# The type and dict offsets read for a class's name and module too, and the
# dict's layout checked in each installed interpreter as it runs; and what
# the referrer search reads to name an instance's attributes (__slots__,
# and from 3.11 on the values kept without a __dict__ and their type's
# shared keys), against the headers and in each interpreter as it runs.
. "$top_srcdir/tests/lib.sh"

# same_offsets HEADERS AGENT WHERE: every "NAME VALUE" line of HEADERS (what a
# program compiled against CPython's headers printed) has the same value in
# AGENT (the agent's "#define NAME VALUE"s); WHERE names the headers.
same_offsets() {
	local name value mine
	while read -r name value; do
		mine=$(awk -v n="$name" '$1 == n { print $2 }' "$2")
		[ "$mine" = "$value" ] || fail "$name: the agent reads $mine, $3 say $value"
	done <"$1"
}

[ -r /usr/include/python3.11/internal/pycore_frame.h ] ||
	skip "CPython 3.11's internal headers are not installed (libpython3.11-dev)"
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || skip "no C compiler ($cc)"
cat > offsets.c <<'C'
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_dict.h>
#include <stddef.h>
#include <stdio.h>
#define P(name, value) printf("%s %zu\n", name, (size_t)(value))
int main(void)
{
#if defined(WANT_DEBUG) && !defined(Py_DEBUG)
#error "not a Py_DEBUG build's headers"
#endif
	P("PY_TSTATE_CFRAME", offsetof(PyThreadState, cframe));
	P("PY_CFRAME_CURRENT", offsetof(_PyCFrame, current_frame));
	P("PY_FRAME_CODE", offsetof(_PyInterpreterFrame, f_code));
	P("PY_FRAME_PREVIOUS", offsetof(_PyInterpreterFrame, previous));
	P("PY_FRAME_PREV_INSTR", offsetof(_PyInterpreterFrame, prev_instr));
	P("PY_FRAME_IS_ENTRY", offsetof(_PyInterpreterFrame, is_entry));
	P("PY_CODE_FILENAME", offsetof(PyCodeObject, co_filename));
	P("PY_CODE_QUALNAME", offsetof(PyCodeObject, co_qualname));
	P("PY_CODE_FIRSTTRACEABLE", offsetof(PyCodeObject, _co_firsttraceable));
	P("PY_CODE_ADAPTIVE", offsetof(PyCodeObject, co_code_adaptive));
	P("PY_STR_LENGTH", offsetof(PyASCIIObject, length));
	P("PY_STR_STATE", offsetof(PyASCIIObject, state));
	P("PY_STR_ASCII_DATA", sizeof(PyASCIIObject));
	P("PY_STR_COMPACT_DATA", sizeof(PyCompactUnicodeObject));
	P("PY_SMALL_REQUEST", 512);
	P("PY_STR_HASH", offsetof(PyASCIIObject, hash));
	P("PY_DICT_TAG", offsetof(PyDictObject, ma_version_tag));
	P("PY_DICT_KEYS", offsetof(PyDictObject, ma_keys));
	P("PY_DICT_VALUES", offsetof(PyDictObject, ma_values));
	P("PY311_DK_LOG2_SIZE", offsetof(PyDictKeysObject, dk_log2_size));
	P("PY311_DK_LOG2_INDEX_BYTES", offsetof(PyDictKeysObject, dk_log2_index_bytes));
	P("PY311_DK_KIND", offsetof(PyDictKeysObject, dk_kind));
	P("PY311_DK_NENTRIES", offsetof(PyDictKeysObject, dk_nentries));
	P("PY311_DK_INDICES", offsetof(PyDictKeysObject, dk_indices));
	P("TP_NAME", offsetof(PyTypeObject, tp_name));
	P("TP_FLAGS", offsetof(PyTypeObject, tp_flags));
	P("TP_DICT", offsetof(PyTypeObject, tp_dict));
	P("HT_QUALNAME_38", offsetof(PyHeapTypeObject, ht_qualname));
	return 0;
}
C
# check INCLUDEDIR [CFLAGS]: the headers' offsets against the agent's
check() {
	inc=$1
	"$cc" -I"$inc" ${2:-} offsets.c -o offsets >cc.out 2>&1 || { fail "cannot compile against $inc: $(head -n 5 cc.out)"; return; }
	./offsets >headers.txt || { fail "offsets failed"; return; }
	same_offsets headers.txt agent.txt "the headers in $inc"
	[ "$(grep -c '' headers.txt)" -eq 28 ] || fail "$inc: expected 28 offsets, got $(grep -c '' headers.txt)"
	echo "$inc: 28 offsets as the agent reads them"
}
# the agent's values: "#define PY_X 123"
sed -n 's/^#define \(PY_[A-Z_]*\|PY311_[A-Z0-9_]*\|TP_[A-Z_]*\|HT_[A-Z0-9_]*\) \([0-9][0-9]*\).*/\1 \2/p' \
	"$top_srcdir/src/agent/pyframes.h" "$top_srcdir/src/agent/pytypes.c" "$top_srcdir/src/agent/python.c" >agent.txt
check /usr/include/python3.11
if [ -r /usr/include/python3.11d/pyconfig.h ]; then
	check /usr/include/python3.11d -DWANT_DEBUG
else
	echo "note: the debug build's headers are not installed (libpython3.11-dbg): not checked" >&2
fi

# 3.8, 3.9, 3.10 and 3.12 (pyenv's builds, where installed): the offsets the
# agent mirrors for each ("#define PY38_X", "PY310_X", "PY312_X" and the ones
# every version shares), against that version's own headers, release and
# Py_DEBUG alike
cat > older.c <<'C'
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#include <internal/pycore_dict.h>
#endif
#include <stddef.h>
#include <stdio.h>
#define P(name, value) printf("%s %zu\n", name, (size_t)(value))
int main(void)
{
	P("PY_TSTATE_NEXT", offsetof(PyThreadState, next));
	P("PY_STR_HASH", offsetof(PyASCIIObject, hash));
	P("PY_DICT_TAG", offsetof(PyDictObject, ma_version_tag));
	P("PY_DICT_KEYS", offsetof(PyDictObject, ma_keys));
	P("PY_DICT_VALUES", offsetof(PyDictObject, ma_values));
	P("TP_NAME", offsetof(PyTypeObject, tp_name));
	P("TP_FLAGS", offsetof(PyTypeObject, tp_flags));
	P("TP_DICT", offsetof(PyTypeObject, tp_dict));
#if PY_VERSION_HEX >= 0x030c0000
	P("HT_QUALNAME_312", offsetof(PyHeapTypeObject, ht_qualname));
#elif PY_VERSION_HEX >= 0x03090000 && PY_VERSION_HEX < 0x030a0000
	P("HT_QUALNAME_39", offsetof(PyHeapTypeObject, ht_qualname));
#else
	P("HT_QUALNAME_38", offsetof(PyHeapTypeObject, ht_qualname));
#endif
	P("PY_TSTATE_INTERP", offsetof(PyThreadState, interp));
	P("PY_OB_TYPE", offsetof(PyObject, ob_type));
	P("PY_STR_LENGTH", offsetof(PyASCIIObject, length));
	P("PY_STR_STATE", offsetof(PyASCIIObject, state));
#if PY_VERSION_HEX < 0x030b0000
	P("PY38_TSTATE_FRAME", offsetof(PyThreadState, frame));
	P("PY38_FRAME_BACK", offsetof(PyFrameObject, f_back));
	P("PY38_FRAME_CODE", offsetof(PyFrameObject, f_code));
#if PY_VERSION_HEX >= 0x030a0000
	P("PY310_FRAME_LASTI", offsetof(PyFrameObject, f_lasti));
	P("PY38_CODE_LNOTAB", offsetof(PyCodeObject, co_linetable));
#else
	P("PY38_FRAME_LASTI", offsetof(PyFrameObject, f_lasti));
	P("PY38_CODE_LNOTAB", offsetof(PyCodeObject, co_lnotab));
#endif
	P("PY38_CODE_FIRSTLINENO", offsetof(PyCodeObject, co_firstlineno));
	P("PY38_CODE_FILENAME", offsetof(PyCodeObject, co_filename));
	P("PY38_CODE_NAME", offsetof(PyCodeObject, co_name));
	P("PY_BYTES_SIZE", offsetof(PyVarObject, ob_size));
	P("PY_BYTES_DATA", offsetof(PyBytesObject, ob_sval));
	P("PY_STR_ASCII_DATA", sizeof(PyASCIIObject));
	P("PY_STR_COMPACT_DATA", sizeof(PyCompactUnicodeObject));
#else
	P("PY312_TSTATE_CFRAME", offsetof(PyThreadState, cframe));
	P("PY312_CFRAME_CURRENT", offsetof(_PyCFrame, current_frame));
	P("PY312_FRAME_CODE", offsetof(_PyInterpreterFrame, f_code));
	P("PY312_FRAME_PREVIOUS", offsetof(_PyInterpreterFrame, previous));
	P("PY312_FRAME_PREV_INSTR", offsetof(_PyInterpreterFrame, prev_instr));
	P("PY312_FRAME_OWNER", offsetof(_PyInterpreterFrame, owner));
	P("PY312_OWNED_BY_CSTACK", FRAME_OWNED_BY_CSTACK);
	P("PY312_CODE_FILENAME", offsetof(PyCodeObject, co_filename));
	P("PY312_CODE_QUALNAME", offsetof(PyCodeObject, co_qualname));
	P("PY312_CODE_FIRSTTRACEABLE", offsetof(PyCodeObject, _co_firsttraceable));
	P("PY312_CODE_ADAPTIVE", offsetof(PyCodeObject, co_code_adaptive));
	P("PY312_STR_ASCII_DATA", sizeof(PyASCIIObject));
	P("PY312_STR_COMPACT_DATA", sizeof(PyCompactUnicodeObject));
	P("PY311_DK_LOG2_SIZE", offsetof(PyDictKeysObject, dk_log2_size));
	P("PY311_DK_LOG2_INDEX_BYTES", offsetof(PyDictKeysObject, dk_log2_index_bytes));
	P("PY311_DK_KIND", offsetof(PyDictKeysObject, dk_kind));
	P("PY311_DK_NENTRIES", offsetof(PyDictKeysObject, dk_nentries));
	P("PY311_DK_INDICES", offsetof(PyDictKeysObject, dk_indices));
#endif
	return 0;
}
C
sed -n 's/^#define \([A-Z0-9_]*\) \([0-9][0-9]*\).*/\1 \2/p' "$top_srcdir/src/agent/pyframes.h" \
	"$top_srcdir/src/agent/pyframes.c" "$top_srcdir/src/agent/pytypes.c" >agent-older.txt
for m in 8 9 10 12; do
	inc=
	for d in "${HOME:-/nonexistent}"/.pyenv/versions/3.$m.*/include/python3.$m /usr/include/python3.$m; do
		[ -r "$d/frameobject.h" ] && inc=$d
	done
	if [ -z "$inc" ]; then
		echo "note: no CPython 3.$m headers (a pyenv build): its offsets not checked" >&2
		continue
	fi
	for mode in release debug; do
		flags=
		[ "$mode" = debug ] && flags=-DPy_DEBUG
		if ! "$cc" -I"$inc" $flags older.c -o older >cco.out 2>&1; then
			fail "cannot compile against $inc ($mode): $(head -n 5 cco.out)"
			continue
		fi
		./older >older.txt || { fail "older failed"; continue; }
		same_offsets older.txt agent-older.txt "CPython 3.$m's headers in $inc ($mode)"
		echo "$inc ($mode): $(grep -c '' older.txt) offsets as the agent reads them"
	done
done

# 3.13 on: each entry of src/agent/pyversions.h (where _Py_DebugOffsets
# holds each offset the agent reads, and what it does not publish) against
# that version's own headers, release and debug: 3.13's where installed (a
# pyenv build), 3.14's and 3.15's in the sid root (libpython3.14-dev,
# libpython3.15-dev; their debug builds' python3.1xd). The headers of the
# root include its multiarch pyconfig.h, reached through a directory of links
# (the root's own libc headers are not the compiler's).
cat > pyvcheck.c <<'C'
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_runtime.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_dict.h>
#include <stddef.h>
#include <stdio.h>
#define MW_PYVERSIONS_TABLE 1
#include "pyversions.h"
static int bad, n;
#define C(field, value) check(#field, v->field, (size_t)(value))
#define D(field, member) C(field, offsetof(_Py_DebugOffsets, member))
static void check(const char *what, size_t mine, size_t theirs)
{
	n++;
	if (mine != theirs) {
		printf("%s: the agent reads %zu, the headers say %zu\n", what, mine, theirs);
		bad++;
	}
}
int main(void)
{
	const struct mw_pyver *v = NULL;
	for (size_t i = 0; i < sizeof mw_pyvers / sizeof mw_pyvers[0]; i++)
		if (mw_pyvers[i].minor == PY_MINOR_VERSION)
			v = &mw_pyvers[i];
	if (!v) {
		printf("no entry for CPython 3.%d\n", PY_MINOR_VERSION);
		return 1;
	}
	D(do_interp_gc, interpreter_state.gc);
	D(do_ts_current_frame, thread_state.current_frame);
	D(do_frame_previous, interpreter_frame.previous);
	D(do_frame_executable, interpreter_frame.executable);
	D(do_frame_instr_ptr, interpreter_frame.instr_ptr);
	D(do_frame_localsplus, interpreter_frame.localsplus);
	D(do_frame_owner, interpreter_frame.owner);
	D(do_code_filename, code_object.filename);
	D(do_code_qualname, code_object.qualname);
	D(do_code_adaptive, code_object.co_code_adaptive);
	D(do_dict_keys, dict_object.ma_keys);
	D(do_dict_values, dict_object.ma_values);
	D(do_str_state, unicode_object.state);
	D(do_str_length, unicode_object.length);
	D(do_str_ascii_size, unicode_object.asciiobject_size);
#if PY_VERSION_HEX < 0x030e0000
	C(owner_entry, FRAME_OWNED_BY_CSTACK);
	C(owner_max, FRAME_OWNED_BY_CSTACK);
	C(executable_tag, 0);
#else
	C(owner_entry, FRAME_OWNED_BY_INTERPRETER);
#if PY_VERSION_HEX < 0x030f0000
	C(owner_max, FRAME_OWNED_BY_CSTACK);
#else
	C(owner_max, FRAME_OWNED_BY_INTERPRETER);
#endif
	C(executable_tag, Py_TAG_BITS | Py_INT_TAG);
#endif
	C(tuple_items, offsetof(PyTupleObject, ob_item));
	C(gc_generations, offsetof(struct _gc_runtime_state, generations));
	C(gc_permanent, offsetof(struct _gc_runtime_state, permanent_generation));
	C(gc_collecting, offsetof(struct _gc_runtime_state, collecting));
	C(ht_qualname, offsetof(PyHeapTypeObject, ht_qualname));
	C(ht_cached_keys, offsetof(PyHeapTypeObject, ht_cached_keys));
	C(module_name, offsetof(PyModuleObject, md_name));
	/* what the agent reads the same in every version it knows */
	check("sizeof (struct gc_generation)", 24, sizeof(struct gc_generation));
	check("sizeof (PyGC_Head)", 16, sizeof(PyGC_Head));
	check("PyObject.ob_type", 8, offsetof(PyObject, ob_type));
	check("PyThreadState.next", 8, offsetof(PyThreadState, next));
	check("PyThreadState.interp", 16, offsetof(PyThreadState, interp));
	check("PyTypeObject.tp_name", 24, offsetof(PyTypeObject, tp_name));
	check("PyTypeObject.tp_flags", 168, offsetof(PyTypeObject, tp_flags));
	check("PyTypeObject.tp_traverse", 184, offsetof(PyTypeObject, tp_traverse));
	check("PyTypeObject.tp_dict", 264, offsetof(PyTypeObject, tp_dict));
	check("PyASCIIObject.hash", 24, offsetof(PyASCIIObject, hash));
	check("compact str data", 16, sizeof(PyCompactUnicodeObject) - sizeof(PyASCIIObject));
	check("PyCodeObject.co_nlocalsplus", 72, offsetof(PyCodeObject, co_nlocalsplus));
	check("PyCodeObject.co_localsplusnames", 96, offsetof(PyCodeObject, co_localsplusnames));
	check("PyCodeObject.co_name", 120, offsetof(PyCodeObject, co_name));
	check("PyDictKeysObject.dk_indices", 32, offsetof(PyDictKeysObject, dk_indices));
	check("PyDictValues.values", 8, offsetof(PyDictValues, values));
	check("SMALL_REQUEST_THRESHOLD", 512, SMALL_REQUEST_THRESHOLD);
	printf("%d offsets as the agent reads them\n", n);
	return bad != 0;
}
C
SID=${MEMWATCH_TEST_SID:-/opt/memwatch-tests/sid}
mkdir -p sidinc/x86_64-linux-gnu
pyv_checked=
for d in "${HOME:-/nonexistent}"/.pyenv/versions/3.13*/include/python3.13 /usr/include/python3.13 \
	 "$SID"/usr/include/python3.14 "$SID"/usr/include/python3.14d \
	 "$SID"/usr/include/python3.15 "$SID"/usr/include/python3.15d; do
	[ -r "$d/internal/pycore_runtime.h" ] || continue
	v=${d##*/}
	[ -d "${d%/*}/x86_64-linux-gnu/$v" ] && ln -sfn "${d%/*}/x86_64-linux-gnu/$v" "sidinc/x86_64-linux-gnu/$v"
	for mode in release debug; do
		flags=
		[ "$mode" = debug ] && flags=-DPy_DEBUG
		if ! "$cc" -D_GNU_SOURCE $flags -Isidinc -I"$d" -I"$top_srcdir/src/agent" pyvcheck.c -o pyvcheck \
			>ccv.out 2>&1; then
			fail "cannot compile against $d ($mode): $(head -n 5 ccv.out)"
			continue
		fi
		if ./pyvcheck >pyv.txt; then
			echo "$d ($mode): $(tail -n 1 pyv.txt)"
		else
			fail "$d ($mode): src/agent/pyversions.h is not as its headers say"
			sed 's/^/  | /' pyv.txt >&2
		fi
	done
	pyv_checked="$pyv_checked ${v%d}"
done
for m in 3.13 3.14 3.15; do
	case " $pyv_checked " in
	*" python$m "*) ;;
	*) echo "note: no CPython $m headers (3.13: a pyenv build; 3.14, 3.15: the sid root of tests/install-deps.sh --tests): its entry not checked" >&2 ;;
	esac
done
# the table as numbers, for the checks in the running interpreters below
cat > pyvtable.c <<'C'
#include <stdio.h>
#define MW_PYVERSIONS_TABLE 1
#include "pyversions.h"
int main(void)
{
	for (size_t i = 0; i < sizeof mw_pyvers / sizeof mw_pyvers[0]; i++)
		printf("PYV%u_HT_CACHED_KEYS %u\n", mw_pyvers[i].minor, mw_pyvers[i].ht_cached_keys);
	return 0;
}
C
"$cc" -I"$top_srcdir/src/agent" pyvtable.c -o pyvtable >ccv.out 2>&1 && ./pyvtable >pyvtable.txt ||
	fail "cannot print the agent's table: $(head -n 5 ccv.out)"

# The dicts as the agent reads a class's (its __module__), on each CPython
# installed, read in the running interpreter (ctypes): 3.8 to 3.10 install no
# header with their keys' layout (Objects/dict-common.h). A dict of 100 str
# keys: its keys' size, count of entries, hash table of indices (each empty or
# naming an entry) and the entries after it, each holding its key, in order.
cat > dictkeys.py <<'P'
import ctypes, sys
a = dict(kv.split("=") for kv in sys.argv[1:])
o = lambda n: int(a[n])
new = sys.version_info >= (3, 11)
word = lambda at: ctypes.c_uint64.from_address(at).value
byte = lambda at: ctypes.c_uint8.from_address(at).value
keys_ = ["key%d" % i for i in range(100)]
d = {k: i for i, k in enumerate(keys_)}
k = word(id(d) + o("PY_DICT_KEYS"))
assert k and word(id(d) + o("PY_DICT_VALUES")) == 0, "not a combined table"
if new:
    l2 = byte(k + o("PY311_DK_LOG2_SIZE"))
    size = 1 << l2
    width = 1 << (byte(k + o("PY311_DK_LOG2_INDEX_BYTES")) - l2)
    kind = byte(k + o("PY311_DK_KIND"))
    assert kind == 1, "kind %d, not str keys" % kind
    esize, keyat = 16, 0
    nent = word(k + o("PY311_DK_NENTRIES"))
    idx = k + o("PY311_DK_INDICES")
else:
    size = word(k + o("PY38_DK_SIZE"))
    width = 1 if size <= 0xff else 2
    esize, keyat = 24, 8
    nent = word(k + o("PY38_DK_NENTRIES"))
    idx = k + o("PY38_DK_INDICES")
assert size >= 128 and size & (size - 1) == 0, "size %d" % size
assert width == (1 if size <= 0xff else 2), "index width %d for size %d" % (width, size)
assert nent == 100, "%d entries" % nent
ix = [int.from_bytes(ctypes.string_at(idx + i * width, width), "little", signed=True) for i in range(size)]
assert all(x == -1 or 0 <= x < 100 for x in ix) and sorted(x for x in ix if x >= 0) == list(range(100)), "indices"
ent = idx + size * width
for i, key in enumerate(keys_):
    assert word(ent + i * esize + keyat) == id(key), "entry %d" % i
# a str's hash where the agent reads it
s = keys_[7]
assert ctypes.c_int64.from_address(id(s) + o("PY_STR_HASH")).value == hash(s), "str hash"
print("ok", size, width, nent)
P
. "$top_srcdir/tests/py-lib.sh"
readable_cpythons
for v in $cpythons; do
	name=${v%%=*} py=${v#*=}
	if "$py" dictkeys.py $(awk '{ print $1 "=" $2 }' agent-older.txt) >dk.out 2>&1; then
		echo "$name: a dict's keys as the agent reads them ($(cat dk.out))"
	else
		fail "$name: a dict's keys are not as the agent reads them: $(tail -n 1 dk.out)"
	fi
done

# An instance's attributes as the referrer search names them
# (src/agent/pyrefs.h), read in each installed interpreter as it runs: a
# class's __slots__ members (its tp_members, then its base's) at their
# offsets; from 3.11 on an instance's values (no __dict__ made: before the
# object in 3.11 and 3.12, inline after its header in 3.13), value i held
# under its type's shared keys' entry i; and once its __dict__ is made, the
# values the agent reads are gone (3.11, 3.12) or still the attributes (3.13).
cat > attrs.py <<'P'
import ctypes, sys
a = dict(kv.split("=") for kv in sys.argv[1:])
o = lambda n: int(a[n])
word = lambda at: ctypes.c_uint64.from_address(at).value
byte = lambda at: ctypes.c_uint8.from_address(at).value
v = sys.version_info[:2]


class Slotted:
    __slots__ = ("first", "second")


class Sub(Slotted):
    __slots__ = ("third",)


s = Sub()
s.first, s.second, s.third = [1], [2], [3]
found = {}
t = id(Sub)
for depth in range(8):
    m = word(t + o("TP_MEMBERS"))
    j = 0
    while m and word(m + j * o("MEMBERDEF_SIZE")):
        md = m + j * o("MEMBERDEF_SIZE")
        if ctypes.c_int.from_address(md + o("MEMBER_TYPE")).value == o("MEMBER_T_OBJECT_EX"):
            found[ctypes.string_at(word(md)).decode()] = word(id(s) + word(md + o("MEMBER_OFFSET")))
        j += 1
    t = word(t + o("TP_BASE"))
    if not t:
        break
want = {"first": id(s.first), "second": id(s.second), "third": id(s.third)}
assert found == want, "slots: %r, not %r" % (found, want)
if v < (3, 11):
    print("slots")
    sys.exit(0)


class Plain:
    def __init__(self):
        self.alpha = [1]
        self.beta = "b" * 40
        self.gamma = {}


def values(p):
    if v == (3, 11):
        return word(id(p) - o("PY311_VALUES_PTR")), 30
    if v == (3, 12):
        w = word(id(p) - o("PY312_DICT_OR_VALUES"))
        return (w + o("PY312_VALUES_BIAS"), 30) if w & o("PY312_VALUES_BIAS") else (0, 0)
    b = id(p) + o("PY313_INLINE_VALUES")
    if byte(b + o("PY313_DV_VALID")) != 1:
        return 0, 0
    return b + o("PY313_DV_VALUES"), byte(b + o("PY313_DV_CAPACITY"))


p = Plain()
keys = word(id(Plain) + o("PY311_HT_CACHED_KEYS" if v == (3, 11) else "PY312_HT_CACHED_KEYS" if v == (3, 12)
                          else "PYV%d_HT_CACHED_KEYS" % v[1]))
assert byte(keys + o("PY311_DK_KIND")) == o("PY311_DK_SPLIT"), "not split keys"
l2, l2i = byte(keys + o("PY311_DK_LOG2_SIZE")), byte(keys + o("PY311_DK_LOG2_INDEX_BYTES"))
assert 3 <= l2 <= 7 and l2i == l2, "keys of size 2^%d, indices of 2^%d bytes" % (l2, l2i)
n = word(keys + o("PY311_DK_NENTRIES"))
assert 3 <= n <= o("PY311_SHARED_KEYS_MAX"), "%d entries" % n
ent = keys + o("PY311_DK_INDICES") + (1 << l2i)
at, cap = values(p)
assert at, "no values"
got = {}
for i in range(min(n, cap)):
    got[ctypes.cast(word(ent + o("PY311_DK_UENTRY_SIZE") * i), ctypes.py_object).value] = word(at + 8 * i)
want = {"alpha": id(p.alpha), "beta": id(p.beta), "gamma": id(p.gamma)}
assert got == want, "values: %r, not %r" % (got, want)
d = p.__dict__
at, cap = values(p)
assert (at == 0) == (v < (3, 13)), "values after __dict__: %x" % at
if at:
    assert all(word(at + 8 * i) == want[k] for i, k in enumerate(got)), "values after __dict__"
print("slots and values (%d entries)" % n)
P
sed -n 's/^#define \([A-Z0-9_]*\) \([0-9][0-9]*\).*/\1 \2/p' "$top_srcdir/src/agent/pyrefs.h" >agent-attrs.txt
cat pyvtable.txt >>agent-attrs.txt
for v in $cpythons; do
	name=${v%%=*} py=${v#*=}
	if "$py" attrs.py $(awk '{ print $1 "=" $2 }' agent-attrs.txt) >at.out 2>&1; then
		echo "$name: an instance's attributes as the agent reads them ($(cat at.out))"
	else
		fail "$name: an instance's attributes are not as the agent reads them: $(tail -n 1 at.out)"
	fi
done

# the collector's state the referrer search walks (src/agent/pyrefs.h): where
# it is (_PyRuntime.gc in 3.8, PyInterpreterState.gc after; in 3.13 the
# agent reads that offset from _Py_DebugOffsets), its generations, permanent
# generation and collecting flag, and the objects it reads, against each
# version's internal headers where installed
cat > gcstate.c <<'C'
#define Py_BUILD_CORE 1
#include <Python.h>
#include <string.h>
#if PY_VERSION_HEX >= 0x03090000
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#else
#include <internal/pycore_pystate.h>
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#include <internal/pycore_dict.h>
#include <internal/pycore_object.h>
#else
#include <frameobject.h>
#endif
#include <structmember.h>
#include <stddef.h>
#include <stdio.h>
#define P(name, value) printf("%s %zu\n", name, (size_t)(value))
int main(void)
{
	/* an instance's attributes: __slots__ members (every version), and
	 * from 3.11 on its values and its type's shared keys, found from an
	 * object of a type with the flags of a class's (its header only) */
	P("TP_BASICSIZE", offsetof(PyTypeObject, tp_basicsize));
	P("STR_LENGTH", offsetof(PyASCIIObject, length));
	P("TP_MEMBERS", offsetof(PyTypeObject, tp_members));
	P("TP_BASE", offsetof(PyTypeObject, tp_base));
	P("MEMBERDEF_SIZE", sizeof(PyMemberDef));
	P("MEMBER_TYPE", offsetof(PyMemberDef, type));
	P("MEMBER_OFFSET", offsetof(PyMemberDef, offset));
	P("MEMBER_T_OBJECT", T_OBJECT);
	P("MEMBER_T_OBJECT_EX", T_OBJECT_EX);
#if PY_VERSION_HEX >= 0x030b0000
	{
		static PyTypeObject tp;
		static union { PyObject *align; char b[512]; } mem;
		PyObject *o = (PyObject *)(mem.b + 256);
		tp.tp_flags = Py_TPFLAGS_HEAPTYPE | Py_TPFLAGS_MANAGED_DICT;
		tp.tp_basicsize = sizeof(PyObject);
		o->ob_type = &tp;
#if PY_VERSION_HEX < 0x030c0000
		P("PY311_HT_CACHED_KEYS", offsetof(PyHeapTypeObject, ht_cached_keys));
		P("PY311_VALUES_PTR", (char *)o - (char *)_PyObject_ValuesPointer(o));
#else
		P("PY312_HT_CACHED_KEYS", offsetof(PyHeapTypeObject, ht_cached_keys));
#endif
#if PY_VERSION_HEX >= 0x030c0000 && PY_VERSION_HEX < 0x030d0000
		{
			PyDictOrValues *dv = _PyObject_DictOrValuesPointer(o);
			uintptr_t w;
			P("PY312_DICT_OR_VALUES", (char *)o - (char *)dv);
			_PyDictOrValues_SetValues(dv, (PyDictValues *)(mem.b + 64));
			memcpy(&w, dv, sizeof w);
			P("PY312_VALUES_BIAS", (uintptr_t)(mem.b + 64) - w);
		}
#endif
#if PY_VERSION_HEX >= 0x030d0000
		tp.tp_flags |= Py_TPFLAGS_INLINE_VALUES;
		P("PY313_INLINE_VALUES", (char *)_PyObject_InlineValues(o) - (char *)o);
		P("PY313_DV_CAPACITY", offsetof(PyDictValues, capacity));
		P("PY313_DV_VALID", offsetof(PyDictValues, valid));
		P("PY313_DV_VALUES", offsetof(PyDictValues, values));
#endif
	}
	P("PY311_DK_LOG2_SIZE", offsetof(PyDictKeysObject, dk_log2_size));
	P("PY311_DK_LOG2_INDEX_BYTES", offsetof(PyDictKeysObject, dk_log2_index_bytes));
	P("PY311_DK_KIND", offsetof(PyDictKeysObject, dk_kind));
	P("PY311_DK_NENTRIES", offsetof(PyDictKeysObject, dk_nentries));
	P("PY311_DK_INDICES", offsetof(PyDictKeysObject, dk_indices));
	P("PY311_DK_SPLIT", DICT_KEYS_SPLIT);
	P("PY311_DK_UENTRY_SIZE", sizeof(PyDictUnicodeEntry));
	P("PY311_SHARED_KEYS_MAX", SHARED_KEYS_MAX_SIZE);
#endif
	/* a running frame's locals */
#if PY_VERSION_HEX < 0x030a0000
	P("PY38_FRAME_LOCALSPLUS", offsetof(PyFrameObject, f_localsplus));
#elif PY_VERSION_HEX < 0x030b0000
	P("PY310_FRAME_LOCALSPLUS", offsetof(PyFrameObject, f_localsplus));
#else
	P("PY311_FRAME_LOCALSPLUS", offsetof(_PyInterpreterFrame, localsplus));
	P("PY311_CODE_LOCALSPLUSNAMES", offsetof(PyCodeObject, co_localsplusnames));
	P("PY311_CODE_NAME", offsetof(PyCodeObject, co_name));
#endif
#if PY_VERSION_HEX < 0x030b0000
	P("PY38_CODE_NLOCALS", offsetof(PyCodeObject, co_nlocals));
	P("PY38_CODE_VARNAMES", offsetof(PyCodeObject, co_varnames));
	P("PY38_CODE_NAME", offsetof(PyCodeObject, co_name));
#elif PY_VERSION_HEX < 0x030c0000
	P("PY311_CODE_NLOCALSPLUS", offsetof(PyCodeObject, co_nlocalsplus));
#else
	P("PY312_CODE_NLOCALSPLUS", offsetof(PyCodeObject, co_nlocalsplus));
#endif
#if PY_VERSION_HEX < 0x03090000
	P("PY38_RUNTIME_GC", offsetof(_PyRuntimeState, gc));
#elif PY_VERSION_HEX < 0x030b0000
	P("PY39_INTERP_GC", offsetof(PyInterpreterState, gc));
#elif PY_VERSION_HEX < 0x030c0000
	P("PY311_INTERP_GC", offsetof(PyInterpreterState, gc));
#elif PY_VERSION_HEX < 0x030d0000
	P("PY312_INTERP_GC", offsetof(PyInterpreterState, gc));
#endif
	/* 3.13 on: where the collector is comes from _Py_DebugOffsets
	 * (src/agent/pyversions.h, checked above) */
	P("GC_GENERATIONS", offsetof(struct _gc_runtime_state, generations));
	P("GC_GENERATION_SIZE", sizeof(struct gc_generation));
	P("GC_PERMANENT", offsetof(struct _gc_runtime_state, permanent_generation));
	P("GC_COLLECTING", offsetof(struct _gc_runtime_state, collecting));
	P("GC_HEAD_SIZE", sizeof(PyGC_Head));
	P("TP_TRAVERSE", offsetof(PyTypeObject, tp_traverse));
	P("TP_DICT", offsetof(PyTypeObject, tp_dict));
	P("TP_DICTOFFSET", offsetof(PyTypeObject, tp_dictoffset));
	P("TP_ITEMSIZE", offsetof(PyTypeObject, tp_itemsize));
	P("LIST_ITEMS", offsetof(PyListObject, ob_item));
	P("TUPLE_ITEMS", offsetof(PyTupleObject, ob_item));
	return 0;
}
C
sed -n 's/^#define \([A-Z0-9_]*\) \([0-9][0-9]*\).*/\1 \2/p' "$top_srcdir/src/agent/pyrefs.h" >agent-gc.txt
checked=0
for m in 8 9 10 11 12 13; do
	for d in "${HOME:-/nonexistent}"/.pyenv/versions/3.$m.*/include/python3.$m /usr/include/python3.$m; do
		[ -r "$d/internal/pycore_gc.h" ] || [ -r "$d/internal/pycore_pystate.h" ] || continue
		# the release build's layout, and the same through Py_DEBUG
		for mode in release debug; do
			flags=
			[ "$mode" = debug ] && flags=-DPy_DEBUG
			if ! "$cc" -D_GNU_SOURCE $flags -I"$d" gcstate.c -o gcstate >ccg.out 2>&1; then
				fail "cannot compile against $d ($mode): $(head -n 5 ccg.out)"
				continue
			fi
			./gcstate >gc.txt || { fail "gcstate failed"; continue; }
			same_offsets gc.txt agent-gc.txt "the headers in $d ($mode)"
			echo "$d ($mode): $(grep -c '' gc.txt) offsets of the collector and of attributes as the referrer search reads them"
		done
		checked=$((checked + 1))
	done
done
[ "$checked" -gt 0 ] || echo "note: no CPython internal headers: the collector's offsets not checked" >&2
finish
