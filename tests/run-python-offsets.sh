#!/bin/sh
# run-python-offsets.sh: the CPython 3.11 structure offsets the agent reads
# (mirrored in src/agent/python.c, not compiled against the headers) match the
# interpreter's own internal headers, where they are installed: the release
# build's (libpython3.11-dev) and the debug build's (Py_DEBUG, libpython3.11-dbg),
# which the agent reads at the same offsets.
. "$top_srcdir/tests/lib.sh"

[ -r /usr/include/python3.11/internal/pycore_frame.h ] ||
	skip "CPython 3.11's internal headers are not installed (libpython3.11-dev)"
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || skip "no C compiler ($cc)"
cat > offsets.c <<'C'
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
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
	return 0;
}
C
# check INCLUDEDIR [CFLAGS]: the headers' offsets against the agent's
check() {
	inc=$1
	"$cc" -I"$inc" ${2:-} offsets.c -o offsets >cc.out 2>&1 || { fail "cannot compile against $inc: $(head -n 5 cc.out)"; return; }
	./offsets >headers.txt || { fail "offsets failed"; return; }
	while read -r name value; do
		mine=$(awk -v n="$name" '$1 == n { print $2 }' agent.txt)
		[ "$mine" = "$value" ] || fail "$name: the agent reads $mine, the headers in $inc say $value"
	done <headers.txt
	[ "$(grep -c '' headers.txt)" -eq 15 ] || fail "$inc: expected 15 offsets, got $(grep -c '' headers.txt)"
	echo "$inc: 15 offsets as the agent reads them"
}
# the agent's values: "#define PY_X 123"
sed -n 's/^#define \(PY_[A-Z_]*\) \([0-9][0-9]*\).*/\1 \2/p' "$top_srcdir/src/agent/python.c" >agent.txt
check /usr/include/python3.11
if [ -r /usr/include/python3.11d/pyconfig.h ]; then
	check /usr/include/python3.11d -DWANT_DEBUG
else
	echo "note: the debug build's headers are not installed (libpython3.11-dbg): not checked" >&2
fi
finish
