#!/bin/sh
# run-python-offsets.sh: the CPython 3.11 structure offsets the agent reads
# (mirrored in src/agent/python.c, not compiled against the headers) match the
# interpreter's own internal headers, where they are installed
# (libpython3.11-dev).
. "$top_srcdir/tests/lib.sh"

inc=/usr/include/python3.11
[ -r "$inc/internal/pycore_frame.h" ] || skip "CPython 3.11's internal headers are not installed (libpython3.11-dev)"
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
"$cc" -I"$inc" offsets.c -o offsets >cc.out 2>&1 || { fail "cannot compile against $inc: $(head -n 5 cc.out)"; finish; }
./offsets >headers.txt || fail "offsets failed"
# the agent's values: "#define PY_X 123"
sed -n 's/^#define \(PY_[A-Z_]*\) \([0-9][0-9]*\).*/\1 \2/p' "$top_srcdir/src/agent/python.c" >agent.txt
while read -r name value; do
	mine=$(awk -v n="$name" '$1 == n { print $2 }' agent.txt)
	[ "$mine" = "$value" ] || fail "$name: the agent reads $mine, CPython 3.11's headers say $value"
done <headers.txt
[ "$(grep -c '' headers.txt)" -eq 15 ] || fail "expected 15 offsets, got $(grep -c '' headers.txt)"
finish
