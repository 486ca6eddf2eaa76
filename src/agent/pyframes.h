/* pyframes.h: what pyframes.c (the frame walk) and pytypes.c (the types of
 * sampled objects) share: the offsets read, per CPython version, and the safe
 * reads. Private to those files. */
#ifndef MEMWATCH_AGENT_PYFRAMES_H
#define MEMWATCH_AGENT_PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent.h"

/* CPython 3.8, 3.9 and 3.10 keep a chain of frame objects (PyFrameObject): the
 * thread state's frame, each frame's f_back, f_code and f_lasti (the last
 * instruction run: a byte offset in 3.8 and 3.9, a count of code units in
 * 3.10), and the code's line table (co_lnotab, co_linetable in 3.10), a bytes
 * object. Offsets checked against the headers of pyenv's 3.8.18, 3.9.18 and
 * 3.10.13 builds, x86_64, release and Py_DEBUG alike
 * (tests/run-python-offsets.sh). */
#define PY38_TSTATE_FRAME 24         /* PyThreadState.frame */
#define PY38_FRAME_BACK 24           /* PyFrameObject.f_back */
#define PY38_FRAME_CODE 32           /* .f_code */
#define PY38_FRAME_LASTI 104         /* .f_lasti (int) */
#define PY310_FRAME_LASTI 96         /* 3.10: .f_lasti (int, in code units) */
#define PY38_CODE_FIRSTLINENO 40     /* PyCodeObject.co_firstlineno (int) */
#define PY38_CODE_FILENAME 104       /* .co_filename */
#define PY38_CODE_NAME 112           /* .co_name */
#define PY38_CODE_LNOTAB 120         /* .co_lnotab; 3.10: .co_linetable */
#define PY_BYTES_SIZE 16             /* PyVarObject.ob_size */
#define PY_BYTES_DATA 32             /* PyBytesObject.ob_sval */

/* CPython 3.11, as far as the agent reads it (offsets checked against the
 * internal headers of Debian's libpython3.11-dev, x86_64). */

#define PY_TSTATE_CFRAME 56          /* PyThreadState.cframe */
#define PY_CFRAME_CURRENT 8          /* _PyCFrame.current_frame */
#define PY_FRAME_CODE 32             /* _PyInterpreterFrame.f_code */
#define PY_FRAME_PREVIOUS 48         /* .previous */
#define PY_FRAME_PREV_INSTR 56       /* .prev_instr */
#define PY_FRAME_IS_ENTRY 68         /* .is_entry (bool) */
#define PY_CODE_FILENAME 112         /* PyCodeObject.co_filename */
#define PY_CODE_QUALNAME 128         /* .co_qualname */
#define PY_CODE_FIRSTTRACEABLE 168   /* ._co_firsttraceable (int) */
#define PY_CODE_ADAPTIVE 184         /* .co_code_adaptive */
#define PY_STR_LENGTH 16             /* PyASCIIObject.length */
#define PY_STR_STATE 32              /* .state: interned:2 kind:3 compact:1 ascii:1 ready:1 */
#define PY_STR_ASCII_DATA 48         /* sizeof (PyASCIIObject) */
#define PY_STR_COMPACT_DATA 72       /* sizeof (PyCompactUnicodeObject) */
#define PY_STR_HASH 24               /* .hash (3.8 to 3.15) */
#define PY_OB_TYPE 8                 /* PyObject.ob_type (every version, without Py_TRACE_REFS) */
#define PY_TSTATE_NEXT 8             /* PyThreadState.next (3.8 to 3.15) */
#define PY_TSTATE_INTERP 16          /* .interp */

/* CPython 3.12: 3.11's _PyInterpreterFrame reordered, each C call of the eval
 * loop starting its frames with one of its own (owner FRAME_OWNED_BY_CSTACK),
 * str without its wstr (checked against pyenv's 3.12.1 headers, x86_64). */
#define PY312_TSTATE_CFRAME 56       /* PyThreadState.cframe */
#define PY312_CFRAME_CURRENT 0       /* _PyCFrame.current_frame */
#define PY312_FRAME_CODE 0           /* _PyInterpreterFrame.f_code */
#define PY312_FRAME_PREVIOUS 8       /* .previous */
#define PY312_FRAME_PREV_INSTR 56    /* .prev_instr */
#define PY312_FRAME_OWNER 70         /* .owner (char) */
#define PY312_CODE_FILENAME 112      /* PyCodeObject.co_filename */
#define PY312_CODE_QUALNAME 128      /* .co_qualname */
#define PY312_CODE_FIRSTTRACEABLE 176   /* ._co_firsttraceable (int) */
#define PY312_CODE_ADAPTIVE 192      /* .co_code_adaptive */
#define PY312_STR_ASCII_DATA 40      /* sizeof (PyASCIIObject) */
#define PY312_STR_COMPACT_DATA 56    /* sizeof (PyCompactUnicodeObject) */

/* A class's dict, where its __module__ is: PyDictObject (3.8 to 3.12:
 * cpython/dictobject.h) and its keys (3.8 to 3.10: Objects/dict-common.h,
 * not installed, as in pyenv's 3.8.18, 3.9.18 and 3.10.13; 3.11 on:
 * internal/pycore_dict.h, checked by tests/run-python-offsets.sh). */
#define PY_DICT_TAG 24               /* PyDictObject.ma_version_tag (3.8 to 3.13; 3.14 on: _ma_watcher_tag) */
#define PY_DICT_KEYS 32              /* .ma_keys */
#define PY_DICT_VALUES 40            /* .ma_values (NULL: a combined table) */
#define PY38_DK_SIZE 8               /* PyDictKeysObject.dk_size (Py_ssize_t) */
#define PY38_DK_NENTRIES 32          /* .dk_nentries */
#define PY38_DK_INDICES 40           /* .dk_indices */
#define PY311_DK_LOG2_SIZE 8         /* 3.11 on: .dk_log2_size (uint8_t) */
#define PY311_DK_LOG2_INDEX_BYTES 9  /* .dk_log2_index_bytes (uint8_t) */
#define PY311_DK_KIND 10             /* .dk_kind (uint8_t: 0 general, 1 str keys, 2 split) */
#define PY311_DK_NENTRIES 24         /* .dk_nentries */
#define PY311_DK_INDICES 32          /* .dk_indices */

/* CPython 3.13 on: the offsets read from the interpreter's _Py_DebugOffsets
 * (pyversions.c); the owner of a C call's entry frame from its version's
 * entry in pyversions.h. */
#define PY312_OWNED_BY_CSTACK 3      /* 3.12: the entry frame of a C call of the eval loop */

/* How a frame's line is found. */
enum py_lines {
	LINES_ADDR2LINE,        /* 3.11+: PyCode_Addr2Line (reads the code's table, allocates nothing) */
	LINES_LNOTAB,           /* 3.8, 3.9: co_lnotab, decoded here */
	LINES_LINETABLE310,     /* 3.10: co_linetable, decoded here */
};

/* Where the frame walk reads, for the version found (set by mw_py_layout). */
struct pyf_layout {
	bool frameobj;          /* 3.8-3.10: a chain of frame objects */
	bool cframe;            /* 3.11, 3.12: the thread state's frame is behind _PyCFrame */
	size_t cf_current;      /* _PyCFrame.current_frame */
	size_t ts_frame;        /* PyThreadState: frame, cframe or current_frame */
	size_t f_previous, f_code, f_instr;
	size_t f_entry;         /* 3.11: is_entry (bool); 0: none */
	size_t f_owner;         /* 3.12+: owner (char); 0: none */
	unsigned owner_entry;   /* 3.12+: a frame of this owner or above is a C call's entry frame */
	unsigned owner_max;     /* the highest owner */
	uintptr_t code_tag;     /* 3.14+: the tag bits of f_executable (a _PyStackRef) */
	size_t co_filename, co_qualname, co_adaptive;   /* co_qualname: co_name before 3.11 */
	size_t co_firsttraceable;   /* 3.11, 3.12; 0: none */
	size_t co_firstlineno, co_lines;   /* 3.8-3.10: the line table (a bytes object) */
	int lasti_unit;         /* 3.8-3.10: bytes per unit of f_lasti */
	enum py_lines lines;
	size_t str_state, str_length, str_ascii_data, str_compact_data;
	bool str_ready_bit;     /* up to 3.11: state bit 7 says the str is ready */
	size_t dict_keys, dict_values;   /* PyDictObject.ma_keys, .ma_values */
	bool dk_log2;           /* 3.11 on: the keys' size as its log2, and their kind */
};
extern struct pyf_layout pyf_lay MW_HIDDEN;

/* The UTF-8 text of a str object, read directly (nothing is asked of the
 * interpreter, which could allocate): into buf, at most len bytes. */
size_t pyf_read_str(const char *o, char *buf, size_t len) MW_HIDDEN;
/* The word at at into *w, read by process_vm_readv on this very process
 * (or through a pipe), which fails where a plain load would fault. */
bool pyf_safe_word(const char *at, const void **w) MW_HIDDEN;
/* n bytes at at into buf, as pyf_safe_word reads; how many could be read. */
size_t pyf_safe_read(const char *at, void *buf, size_t n) MW_HIDDEN;
/* Is obj's type (read safely) type. */
bool pyf_safe_type(const char *obj, const void *type) MW_HIDDEN;

#endif
