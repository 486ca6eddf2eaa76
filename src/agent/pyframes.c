/* pyframes.c: the Python frames of a sample in a CPython process (found by
 * python.c): the allocating thread's frames walked at sample time and merged
 * into its native stack where the eval loop's frames stand (mw_python_merge),
 * each frame interned as (qualified name, file, line), and the frames a
 * snapshot uses named in it (mw_python_snapshot). The structures read are
 * mirrored here from each version's headers (3.8 to 3.10: cpython/pystate.h,
 * frameobject.h, code.h; 3.11 and 3.12: internal/pycore_frame.h,
 * cpython/code.h, cpython/unicodeobject.h), or from 3.13 on read from the
 * table the interpreter publishes for debuggers (_Py_DebugOffsets, at the
 * start of _PyRuntime; where it holds what, per version: pyversions.h), and
 * checked against the running interpreter before any frame is read
 * (mw_py_check). */
#include "config.h"

#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "python.h"
#include "pyversions.h"
#include "snapshot.h"

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

/* Where the frame walk reads, for the version found. */
static struct {
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
} lay;

/* The str layout of 3.8 to 3.11 (with wstr), and 3.12's (without). */
static void str_layout(bool wstr)
{
	lay.str_state = PY_STR_STATE;
	lay.str_length = PY_STR_LENGTH;
	lay.str_ascii_data = wstr ? PY_STR_ASCII_DATA : PY312_STR_ASCII_DATA;
	lay.str_compact_data = wstr ? PY_STR_COMPACT_DATA : PY312_STR_COMPACT_DATA;
	lay.str_ready_bit = wstr;
}

/* The dict layout of 3.8 to 3.10 (dk_size, the index width from it) and of
 * 3.11 and 3.12 (dk_log2_size, dk_log2_index_bytes, dk_kind). */
static void dict_layout(bool log2)
{
	lay.dict_keys = PY_DICT_KEYS;
	lay.dict_values = PY_DICT_VALUES;
	lay.dk_log2 = log2;
}

bool mw_py_layout(const char *runtime)
{
	unsigned minor = (unsigned)(mw_py.version >> 16);

	memset(&lay, 0, sizeof lay);
	if (minor >= 0x0308 && minor <= 0x030a) {
		lay.frameobj = true;
		lay.ts_frame = PY38_TSTATE_FRAME;
		lay.f_previous = PY38_FRAME_BACK;
		lay.f_code = PY38_FRAME_CODE;
		lay.f_instr = minor == 0x030a ? PY310_FRAME_LASTI : PY38_FRAME_LASTI;
		lay.lasti_unit = minor == 0x030a ? 2 : 1;
		lay.co_filename = PY38_CODE_FILENAME;
		lay.co_qualname = PY38_CODE_NAME;
		lay.co_firstlineno = PY38_CODE_FIRSTLINENO;
		lay.co_lines = PY38_CODE_LNOTAB;
		lay.lines = minor == 0x030a ? LINES_LINETABLE310 : LINES_LNOTAB;
		str_layout(true);
		dict_layout(false);
		return true;
	}
	if (minor == 0x030b) {
		lay.cframe = true;
		lay.ts_frame = PY_TSTATE_CFRAME;
		lay.cf_current = PY_CFRAME_CURRENT;
		lay.f_previous = PY_FRAME_PREVIOUS;
		lay.f_code = PY_FRAME_CODE;
		lay.f_instr = PY_FRAME_PREV_INSTR;
		lay.f_entry = PY_FRAME_IS_ENTRY;
		lay.co_filename = PY_CODE_FILENAME;
		lay.co_qualname = PY_CODE_QUALNAME;
		lay.co_adaptive = PY_CODE_ADAPTIVE;
		lay.co_firsttraceable = PY_CODE_FIRSTTRACEABLE;
		lay.lines = LINES_ADDR2LINE;
		str_layout(true);
		dict_layout(true);
		return true;
	}
	if (minor == 0x030c) {
		lay.cframe = true;
		lay.ts_frame = PY312_TSTATE_CFRAME;
		lay.cf_current = PY312_CFRAME_CURRENT;
		lay.f_previous = PY312_FRAME_PREVIOUS;
		lay.f_code = PY312_FRAME_CODE;
		lay.f_instr = PY312_FRAME_PREV_INSTR;
		lay.f_owner = PY312_FRAME_OWNER;
		lay.owner_entry = lay.owner_max = PY312_OWNED_BY_CSTACK;
		lay.co_filename = PY312_CODE_FILENAME;
		lay.co_qualname = PY312_CODE_QUALNAME;
		lay.co_adaptive = PY312_CODE_ADAPTIVE;
		lay.co_firsttraceable = PY312_CODE_FIRSTTRACEABLE;
		lay.lines = LINES_ADDR2LINE;
		str_layout(false);
		dict_layout(true);
		return true;
	}
	/* 3.13 on: from the interpreter's own table, which must say it
	 * describes this very build */
	if (!mw_py_debug_offsets(runtime))
		return false;
	lay.ts_frame = mw_py_do.ts_current_frame;
	lay.f_previous = mw_py_do.frame_previous;
	lay.f_code = mw_py_do.frame_executable;
	lay.f_instr = mw_py_do.frame_instr_ptr;
	lay.f_owner = mw_py_do.frame_owner;
	lay.owner_entry = mw_py_do.v->owner_entry;
	lay.owner_max = mw_py_do.v->owner_max;
	lay.code_tag = mw_py_do.v->executable_tag;
	lay.co_filename = mw_py_do.code_filename;
	lay.co_qualname = mw_py_do.code_qualname;
	lay.co_adaptive = mw_py_do.code_adaptive;
	lay.lines = LINES_ADDR2LINE;
	lay.str_state = mw_py_do.str_state;
	lay.str_length = mw_py_do.str_length;
	lay.str_ascii_data = mw_py_do.str_ascii_size;
	/* PyCompactUnicodeObject: utf8_length and utf8 after PyASCIIObject */
	lay.str_compact_data = lay.str_ascii_data + 2 * sizeof(void *);
	lay.str_ready_bit = false;
	lay.dict_keys = mw_py_do.dict_keys;
	lay.dict_values = mw_py_do.dict_values;
	lay.dk_log2 = true;
	return true;
}

/* ------------------------------------------------------------------------- */
/* Python frames: (qualified name, file, line) interned in a table of the
 * agent's own, in mmap'd storage, kept for the agent's life (a frame's id is
 * stable across captures; the snapshot names it by a hash of its content,
 * the same in every run). */

struct pyframe {
	uint64_t hash;
	const char *name, *file;
	uint32_t line;
};

#define PYF_MAX (1u << 20)
static pthread_mutex_t pyf_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pyframe *pyf;            /* PYF_MAX entries, mapped on first use */
static uint32_t *pyf_index;            /* open-addressed: id + 1 */
static uint32_t pyf_n;
static char *str_chunk;
static size_t str_left;

static char *str_copy(const char *s, size_t n)
{
	char *r;
	if (n + 1 > str_left) {
		size_t len = n + 1 > 65536 ? (n + 1 + 4095) & ~(size_t)4095 : 65536;
		str_chunk = mw_map(len);
		if (!str_chunk) {
			str_left = 0;
			return NULL;
		}
		str_left = len;
	}
	r = str_chunk;
	memcpy(r, s, n);
	r[n] = 0;
	str_chunk += n + 1;
	str_left -= n + 1;
	return r;
}

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001B3ull;
	}
	return h;
}

/* The UTF-8 text of a str object, read directly (nothing is asked of the
 * interpreter, which could allocate): into buf, at most len bytes. */
static size_t read_str(const char *o, char *buf, size_t len)
{
	uint32_t state;
	size_t n, i, k = 0;
	unsigned kind;
	const char *data;

	if (!o)
		return 0;
	state = *(const uint32_t *)(o + lay.str_state);
	n = (size_t)*(const int64_t *)(o + lay.str_length);
	if (!(state & (1u << 5)) || (lay.str_ready_bit && !(state & (1u << 7))))
		return 0;                                     /* not compact, or not ready */
	kind = (state >> 2) & 7;
	if (state & (1u << 6)) {                              /* compact ASCII */
		if (n > len)
			n = len;
		memcpy(buf, o + lay.str_ascii_data, n);
		return n;
	}
	data = o + lay.str_compact_data;
	for (i = 0; i < n; i++) {
		uint32_t c = kind == 1 ? ((const uint8_t *)data)[i]
			   : kind == 2 ? ((const uint16_t *)data)[i] : ((const uint32_t *)data)[i];
		if (k + 4 > len)
			break;
		if (c < 0x80) {
			buf[k++] = (char)c;
		} else if (c < 0x800) {
			buf[k++] = (char)(0xC0 | (c >> 6));
			buf[k++] = (char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			buf[k++] = (char)(0xE0 | (c >> 12));
			buf[k++] = (char)(0x80 | ((c >> 6) & 0x3F));
			buf[k++] = (char)(0x80 | (c & 0x3F));
		} else {
			buf[k++] = (char)(0xF0 | (c >> 18));
			buf[k++] = (char)(0x80 | ((c >> 12) & 0x3F));
			buf[k++] = (char)(0x80 | ((c >> 6) & 0x3F));
			buf[k++] = (char)(0x80 | (c & 0x3F));
		}
	}
	return k;
}

/* The id of a Python frame, or 0 (a frame that could not be stored reads as
 * unknown). Called on the sampling path (the thread's guard is up). */
static uint32_t pyframe_id(const char *code, int line)
{
	char name[256], file[512];
	size_t nn = read_str(*(const char *const *)(code + lay.co_qualname), name, sizeof name);
	size_t fn = read_str(*(const char *const *)(code + lay.co_filename), file, sizeof file);
	uint64_t h = hash_bytes(0xCBF29CE484222325ull, name, nn);
	uint32_t id = 0, j;

	h = hash_bytes(h ^ 0xFF, file, fn);
	h = hash_bytes(h ^ 0xFE, (const char *)&line, sizeof line);
	h &= 0x7FFFFFFFFFFFFFFFull;
	h = h ? h : 1;
	pthread_mutex_lock(&pyf_lock);
	if (!pyf) {
		pyf = mw_map(PYF_MAX * sizeof *pyf);
		pyf_index = mw_map(2 * PYF_MAX * sizeof *pyf_index);
		if (!pyf || !pyf_index)
			goto out;
		pyf_n = 1;     /* id 0: unknown */
	}
	for (j = (uint32_t)h & (2 * PYF_MAX - 1); pyf_index[j]; j = (j + 1) & (2 * PYF_MAX - 1)) {
		const struct pyframe *f = &pyf[pyf_index[j] - 1];
		if (f->hash == h && f->line == (uint32_t)line && strlen(f->name) == nn &&
		    memcmp(f->name, name, nn) == 0 && strlen(f->file) == fn && memcmp(f->file, file, fn) == 0) {
			id = pyf_index[j] - 1;
			goto out;
		}
	}
	if (pyf_n < PYF_MAX) {
		struct pyframe *f = &pyf[pyf_n];
		f->name = str_copy(name, nn);
		f->file = str_copy(file, fn);
		if (f->name && f->file) {
			f->hash = h;
			f->line = line > 0 ? (uint32_t)line : 0;
			pyf_index[j] = pyf_n + 1;
			id = pyf_n++;
		}
	}
out:
	pthread_mutex_unlock(&pyf_lock);
	return id;
}

/* One Python frame of this thread: its id, and whether it is the first
 * (outermost) one a C call of the eval loop runs. */
struct pyf_ref {
	uint32_t id;
	bool entry;
};

#define PY_MAX_FRAMES 128   /* read per sample (1 KiB of the allocating thread's stack) */

/* 3.8-3.10: the line of the instruction at byte offset addr of a code object,
 * from its line table, decoded here as CPython's own PyCode_Addr2Line does
 * (which would report a malformed table through the thread's error state).
 * 0 when the instruction has no line. */
static int frameobj_line(const char *code, int addr)
{
	const char *tab = *(const char *const *)(code + lay.co_lines);
	int line = *(const int *)(code + lay.co_firstlineno);
	const signed char *p;
	int64_t size;
	int start, end = 0;

	if (!tab || addr < 0)
		return line;
	size = *(const int64_t *)(tab + PY_BYTES_SIZE);
	if (size < 0 || size > (1 << 24))
		return 0;
	p = (const signed char *)(tab + PY_BYTES_DATA);
	if (lay.lines == LINES_LNOTAB) {
		/* pairs (address increment, signed line increment) */
		for (int64_t i = 0; i + 1 < size; i += 2) {
			end += (unsigned char)p[i];
			if (end > addr)
				break;
			line += p[i + 1];
		}
		return line;
	}
	/* 3.10: pairs (length in bytes, signed line increment; -128: none) */
	for (int64_t i = 0; i + 1 < size; i += 2) {
		int ld = p[i + 1];
		start = end;
		end += (unsigned char)p[i];
		if (ld != -128)
			line += ld;
		if (addr >= start && addr < end)
			return ld == -128 ? 0 : line;
	}
	return 0;
}

/* The frames last named, by code object and instruction offset: a frame's
 * line is found by walking its code's line table and its name and file are
 * copied and hashed, which with every allocation sampled was half the cost of
 * capture; most samples come from a few lines. Direct-mapped and shared by
 * the threads without a lock: an entry is taken only when its check word
 * matches what it holds, so one torn by two writers is a miss, and only while
 * the code object still names the same name and file objects. (A code object
 * freed and another made at its address with the same name and file objects,
 * code that exec makes again from the same text, may be named with the line
 * of the first at the same offset.) */
#define FRAME_CACHE_BITS 12
static struct frame_cached {
	uintptr_t code, name, file;
	uint64_t at;            /* offset << 32 | id */
	uint64_t check;
} frame_cache[1u << FRAME_CACHE_BITS];

static uint64_t frame_check(uintptr_t code, uintptr_t name, uintptr_t file, uint64_t at)
{
	uint64_t h = code * 0x9E3779B97F4A7C15ull;
	h = (h ^ name) * 0xC2B2AE3D27D4EB4Full;
	h = (h ^ file) * 0x165667B19E3779F9ull;
	h = (h ^ at) * 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 29);
}

/* The id of the frame that runs code at instruction byte offset off (-1: not
 * started). */
static uint32_t frame_at(const char *code, int off)
{
	uintptr_t c = (uintptr_t)code;
	uintptr_t name = *(const uintptr_t *)(code + lay.co_qualname);
	uintptr_t file = *(const uintptr_t *)(code + lay.co_filename);
	uint64_t slot = ((c >> 4) + (uint64_t)(uint32_t)off * 0x100000001B3ull) * 0x9E3779B97F4A7C15ull;
	struct frame_cached *e = &frame_cache[slot >> (64 - FRAME_CACHE_BITS)];
	uint64_t at = __atomic_load_n(&e->at, __ATOMIC_RELAXED);
	uint32_t id;
	int line;

	if (__atomic_load_n(&e->code, __ATOMIC_RELAXED) == c &&
	    __atomic_load_n(&e->name, __ATOMIC_RELAXED) == name &&
	    __atomic_load_n(&e->file, __ATOMIC_RELAXED) == file && (uint32_t)(at >> 32) == (uint32_t)off &&
	    __atomic_load_n(&e->check, __ATOMIC_RELAXED) == frame_check(c, name, file, at))
		return (uint32_t)at;
	line = lay.frameobj ? frameobj_line(code, off) : mw_py.addr2line((void *)code, off);
	id = pyframe_id(code, line);
	if (!id)
		return 0;
	at = (uint64_t)(uint32_t)off << 32 | id;
	__atomic_store_n(&e->code, c, __ATOMIC_RELAXED);
	__atomic_store_n(&e->name, name, __ATOMIC_RELAXED);
	__atomic_store_n(&e->file, file, __ATOMIC_RELAXED);
	__atomic_store_n(&e->at, at, __ATOMIC_RELAXED);
	__atomic_store_n(&e->check, frame_check(c, name, file, at), __ATOMIC_RELAXED);
	return id;
}

/* Read this thread's Python frames, newest first. */
static unsigned read_frames(struct pyf_ref *out, unsigned max)
{
	const char *ts, *f;
	unsigned n = 0;

	if (!mw_python_frames || mw_py.is_finalizing())
		return 0;
	ts = mw_py.this_tstate();
	if (!ts)
		return 0;
	f = *(const char *const *)(ts + lay.ts_frame);
	if (lay.frameobj) {
		/* one C call of the eval loop per frame: each is its own entry */
		for (; f && n < max; f = *(const char *const *)(f + lay.f_previous)) {
			const char *code = *(const char *const *)(f + lay.f_code);
			int lasti = *(const int *)(f + lay.f_instr);
			if (!code || *(const void *const *)(code + PY_OB_TYPE) != mw_py.code_type)
				continue;
			out[n].id = frame_at(code, lasti < 0 ? -1 : lasti * lay.lasti_unit);
			out[n].entry = true;
			n++;
		}
		return n;
	}
	if (lay.cframe && f)
		f = *(const char *const *)(f + lay.cf_current);
	for (; f && n < max; f = *(const char *const *)(f + lay.f_previous)) {
		const char *code, *instr, *first;
		bool entry = lay.f_entry && *(const bool *)(f + lay.f_entry);
		/* 3.12+: each C call of the eval loop starts its frames with one
		 * of its own (on the C stack), which runs no code */
		if (lay.f_owner && *(const unsigned char *)(f + lay.f_owner) >= lay.owner_entry) {
			if (n)
				out[n - 1].entry = true;
			continue;
		}
		code = (const char *)(*(const uintptr_t *)(f + lay.f_code) & ~lay.code_tag);
		if (!code || (mw_py.code_type && *(const void *const *)(code + PY_OB_TYPE) != mw_py.code_type))
			continue;
		instr = *(const char *const *)(f + lay.f_instr);
		first = code + lay.co_adaptive;
		/* a frame still being set up has run nothing yet: not shown, but
		 * its entry mark still ends its C call's frames */
		if (lay.co_firsttraceable &&
		    instr < first + (ptrdiff_t)*(const int *)(code + lay.co_firsttraceable) * 2) {
			if (entry && n)
				out[n - 1].entry = true;
			continue;
		}
		out[n].id = frame_at(code, (int)(instr - first));
		out[n].entry = entry;
		n++;
	}
	return n;
}

/* ------------------------------------------------------------------------- */
/* The layout checked against the running interpreter, while it runs: every
 * thread state of the main
 * interpreter names it as its own, and every frame of theirs (up to a bound) is
 * readable and runs a code object (its type PyCode_Type) whose file and name
 * are str objects and, before 3.11, whose line table is a bytes object. Each
 * word is read by process_vm_readv on this very process, which fails where a
 * plain load would fault. */

static int check_pipe[2] = { -1, -1 };

static bool safe_word(const char *at, const void **w)
{
	struct iovec mine = { (void *)w, sizeof *w }, theirs = { (void *)at, sizeof *w };
	ssize_t r;

	if ((uintptr_t)at < 4096 || ((uintptr_t)at & (sizeof *w - 1)))
		return false;
	if (check_pipe[0] < 0) {
		r = process_vm_readv(getpid(), &mine, 1, &theirs, 1, 0);
		if (r == (ssize_t)sizeof *w)
			return true;
		if (r >= 0 || (errno != EPERM && errno != ENOSYS))
			return false;
		/* refused (seccomp): through a pipe, whose write fails with
		 * EFAULT where a load would fault */
		if (pipe2(check_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
			return false;
	}
	if (write(check_pipe[1], at, sizeof *w) != (ssize_t)sizeof *w)
		return false;
	return read(check_pipe[0], w, sizeof *w) == (ssize_t)sizeof *w;
}

/* n bytes at at into buf, as safe_word reads; how many could be read (a
 * read that crosses into an unmapped page stops there). */
static size_t safe_read(const char *at, void *buf, size_t n)
{
	struct iovec mine = { buf, n }, theirs = { (void *)at, n };
	ssize_t r;
	size_t k;

	if ((uintptr_t)at < 4096)
		return 0;
	if (check_pipe[0] < 0) {
		r = process_vm_readv(getpid(), &mine, 1, &theirs, 1, 0);
		if (r >= 0)
			return (size_t)r;
		if (errno != EPERM && errno != ENOSYS)
			return 0;
	}
	/* word by word, as safe_word falls back to */
	for (k = 0; k + sizeof(void *) <= n; k += sizeof(void *)) {
		const void *w;
		if (((uintptr_t)at & (sizeof w - 1)) || !safe_word(at + k, &w))
			break;
		memcpy((char *)buf + k, &w, sizeof w);
	}
	return k;
}

static bool safe_type(const char *obj, const void *type)
{
	const void *t;
	return type && safe_word(obj + PY_OB_TYPE, &t) && t == type;
}

/* For pyrefs.c, with the GIL held: each frame of every thread of the
 * interpreter (3.8 to 3.10: its frame objects, which the collector does not
 * track while they run; 3.11 on: its interpreter frames): fn(frame, code,
 * arg) until it returns non-zero. Frames the C stack owns (3.12 on) are
 * passed over. The lists are followed by safe reads. */
void mw_py_each_frame(const void *interp, int (*fn)(const char *frame, const char *code, void *arg), void *arg)
{
	const char *ts, *f, *code;
	unsigned threads = 0, k;

	if (!mw_py.thread_head || !interp)
		return;
	for (ts = mw_py.thread_head(interp); ts && threads < 1024; threads++) {
		if (!safe_word(ts + lay.ts_frame, (const void **)&f) ||
		    (f && lay.cframe && !safe_word(f + lay.cf_current, (const void **)&f)))
			f = NULL;
		for (k = 0; f && k < 1024; k++) {
			bool skip = false;
			if (lay.f_owner) {
				const void *ow;
				unsigned char owner;
				if (!safe_word((const char *)((uintptr_t)(f + lay.f_owner) & ~(uintptr_t)7), &ow))
					break;
				memcpy(&owner, (const char *)&ow + ((uintptr_t)(f + lay.f_owner) & 7), 1);
				skip = owner >= lay.owner_entry;
			}
			if (!skip && safe_word(f + lay.f_code, (const void **)&code) &&
			    (code = (const char *)((uintptr_t)code & ~lay.code_tag)) &&
			    safe_type(code, mw_py.code_type) && fn(f, code, arg))
				return;
			if (!safe_word(f + lay.f_previous, (const void **)&f))
				break;
		}
		if (!safe_word(ts + PY_TSTATE_NEXT, (const void **)&ts))
			break;
	}
}

/* A frame may be popped while it is read: the caller tries again before
 * believing a failure. */
#define CHECK_THREADS 256
#define CHECK_FRAMES 64

int mw_py_check(char *why, size_t len)
{
	const char *interp, *ts, *f, *code, *w;
	unsigned threads = 0, frames = 0, k;
	const char *forced = getenv("MEMWATCH_TEST_PY_LAYOUT");

	if (forced && strcmp(forced, "fail") == 0) {
		snprintf(why, len, "the check made to fail by MEMWATCH_TEST_PY_LAYOUT");
		return -1;
	}
	if (!mw_py.interp_head || !mw_py.thread_head || !mw_py.unicode_type ||
	    (lay.frameobj && !mw_py.bytes_type)) {
		snprintf(why, len, "the functions to list its threads are missing");
		return -1;
	}
	interp = mw_py.interp_head();
	/* the list is followed by safe reads (PyThreadState.next): a thread may
	 * end meanwhile */
	for (ts = interp ? mw_py.thread_head(interp) : NULL; ts && threads < CHECK_THREADS; threads++) {
		if (!safe_word(ts + PY_TSTATE_INTERP, (const void **)&w) || w != interp) {
			snprintf(why, len, "a thread state does not name its interpreter where expected");
			return -1;
		}
		if (!safe_word(ts + lay.ts_frame, (const void **)&f) ||
		    (f && lay.cframe && !safe_word(f + lay.cf_current, (const void **)&f))) {
			snprintf(why, len, "a thread state's frame is not readable");
			return -1;
		}
		for (k = 0; f && k < CHECK_FRAMES; k++) {
			if (lay.f_owner) {
				const void *ow;
				unsigned char owner;
				if (!safe_word((const char *)((uintptr_t)(f + lay.f_owner) & ~(uintptr_t)7), &ow)) {
					snprintf(why, len, "a frame is not readable");
					return -1;
				}
				memcpy(&owner, (const char *)&ow + ((uintptr_t)(f + lay.f_owner) & 7), 1);
				if (owner > lay.owner_max) {
					snprintf(why, len, "a frame's owner is %u, not one of 0 to %u", owner,
						 lay.owner_max);
					return -1;
				}
				if (owner >= lay.owner_entry)
					goto next;
			}
			if (!safe_word(f + lay.f_code, (const void **)&code) ||
			    !(code = (const char *)((uintptr_t)code & ~lay.code_tag))) {
				snprintf(why, len, "a frame's code is not readable");
				return -1;
			}
			if (!safe_type(code, mw_py.code_type)) {
				snprintf(why, len, "a frame's code object is not of the code type");
				return -1;
			}
			if (!safe_word(code + lay.co_filename, (const void **)&w) || !safe_type(w, mw_py.unicode_type) ||
			    !safe_word(code + lay.co_qualname, (const void **)&w) || !safe_type(w, mw_py.unicode_type)) {
				snprintf(why, len, "a code object's file or name is not a str");
				return -1;
			}
			if (lay.frameobj &&
			    (!safe_word(code + lay.co_lines, (const void **)&w) || !safe_type(w, mw_py.bytes_type))) {
				snprintf(why, len, "a code object's line table is not a bytes object");
				return -1;
			}
			frames++;
		next:
			if (!safe_word(f + lay.f_previous, (const void **)&f)) {
				snprintf(why, len, "a frame's caller is not readable");
				return -1;
			}
		}
		if (!safe_word(ts + PY_TSTATE_NEXT, (const void **)&ts)) {
			snprintf(why, len, "a thread state's next is not readable");
			return -1;
		}
	}
	if (!threads) {
		snprintf(why, len, "it lists no thread");
		return -1;
	}
	snprintf(why, len, "no Python frame to check yet");
	return frames ? 1 : 0;
}

unsigned mw_python_merge(const uintptr_t *ips, unsigned n, uintptr_t *out, unsigned max)
{
	struct pyf_ref pf[PY_MAX_FRAMES];
	unsigned np = read_frames(pf, PY_MAX_FRAMES), pi = 0, k = 0, i;

	for (i = 0; i < n && k < max; i++) {
		uintptr_t a = ips[i] - 1;
		/* the wrappers' own frames, under a sample the hooks took */
		if (mw_in_agent(ips[i]))
			continue;
		if (pi < np && a >= mw_py.eval_lo && a < mw_py.eval_hi) {
			/* this C call of the eval loop ran the frames up to the next
			 * entry frame */
			do
				out[k++] = MW_PYFRAME_TAG | pf[pi].id;
			while (!pf[pi++].entry && pi < np && k < max);
			continue;
		}
		out[k++] = ips[i];
	}
	/* frames whose eval call was not found (cut by the depth) go outermost */
	for (; pi < np && k < max && i == n; pi++)
		out[k++] = MW_PYFRAME_TAG | pf[pi].id;
	return k;
}

/* ------------------------------------------------------------------------- */
/* Snapshots: the Python frames a snapshot uses, as symbols of the pseudo-module
 * "[python]" whose offsets are the frames' content hashes. */

static int mw_python_symbol(uint32_t id, uint64_t *hash, struct snap_symframe *f)
{
	int r = -1;
	pthread_mutex_lock(&pyf_lock);
	if (pyf && id < pyf_n) {
		*hash = id ? pyf[id].hash : 0;
		f->function = strdup(id ? pyf[id].name : "<python>");
		f->file = id ? strdup(pyf[id].file) : NULL;
		f->line = id ? pyf[id].line : 0;
		r = f->function && (!id || f->file) ? 0 : -1;
	}
	pthread_mutex_unlock(&pyf_lock);
	return r;
}

/* fork: see python.h. */
void mw_pyframes_atfork_prepare(void)
{
	pthread_mutex_lock(&pyf_lock);
}

void mw_pyframes_atfork_parent(void)
{
	pthread_mutex_unlock(&pyf_lock);
}

void mw_pyframes_atfork_child(void)
{
	pthread_mutex_init(&pyf_lock, NULL);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int mw_python_snapshot(struct snapshot *s)
{
	uint64_t *ids = NULL, *hashes = NULL;
	size_t n = 0, cap = 0, i, k, u = 0;
	struct snap_module *m;
	uint32_t mod;

	for (i = 0; i < s->nstacks; i++)
		for (k = 0; k < s->stacks[i].nframes; k++) {
			const struct snap_frame *f = &s->stacks[i].frames[k];
			if (f->module != SNAP_NO_MODULE || (f->offset & MW_PYFRAME_MASK) != MW_PYFRAME_TAG)
				continue;
			if (n == cap) {
				uint64_t *x = realloc(ids, (cap = cap ? cap * 2 : 256) * sizeof *ids);
				if (!x)
					goto fail;
				ids = x;
			}
			ids[n++] = f->offset & ~MW_PYFRAME_MASK;
		}
	if (!n)
		return 0;
	qsort(ids, n, sizeof *ids, cmp_u64);
	for (i = 0; i < n; i++)
		if (!u || ids[u - 1] != ids[i])
			ids[u++] = ids[i];
	hashes = calloc(u, sizeof *hashes);
	m = realloc(s->modules, (s->nmodules + 1) * sizeof *m);
	if (!hashes || !m)
		goto fail;
	s->modules = m;
	mod = (uint32_t)s->nmodules;
	memset(&m[mod], 0, sizeof m[mod]);
	m[mod].path = strdup("[python]");
	if (!m[mod].path)
		goto fail;
	s->nmodules++;
	s->symbols = calloc(u, sizeof *s->symbols);
	if (!s->symbols)
		goto fail;
	for (i = 0; i < u; i++) {
		struct snap_symbol *y = &s->symbols[s->nsymbols];
		y->frames = calloc(1, sizeof *y->frames);
		if (!y->frames || mw_python_symbol((uint32_t)ids[i], &hashes[i], y->frames) < 0) {
			if (y->frames) {
				free(y->frames->function);
				free(y->frames->file);
			}
			free(y->frames);
			y->frames = NULL;
			goto fail;
		}
		y->module = mod;
		y->offset = hashes[i];
		y->nframes = 1;
		s->nsymbols++;
	}
	for (i = 0; i < s->nstacks; i++)
		for (k = 0; k < s->stacks[i].nframes; k++) {
			struct snap_frame *f = &s->stacks[i].frames[k];
			uint64_t id, *at;
			if (f->module != SNAP_NO_MODULE || (f->offset & MW_PYFRAME_MASK) != MW_PYFRAME_TAG)
				continue;
			id = f->offset & ~MW_PYFRAME_MASK;
			at = bsearch(&id, ids, u, sizeof *ids, cmp_u64);
			f->module = mod;
			f->offset = at ? hashes[at - ids] : 0;
		}
	free(ids);
	free(hashes);
	return 0;
fail:
	free(ids);
	free(hashes);
	return -1;
}

/* ------------------------------------------------------------------------- */
/* Objects by type: at snapshot time, the type of the object in each live
 * sampled block. An object allocated by the interpreter starts its block, or
 * follows its GC header (PyGC_Head, two words) when its type has
 * Py_TPFLAGS_HAVE_GC, and from 3.11 on the two words of a managed dict (3.12
 * on: a managed dict or weak reference list) before that
 * (_PyType_PreHeaderSize). A block is taken for an object of type T only when
 * the word at the offset where ob_type would be is T, T is a type (its own
 * type is PyType_Type or a metaclass, as PyType_Check tells), and T's flags put the
 * object at exactly that offset. Every word is read by safe reads: a block
 * may be freed while it is read, and nothing here holds the GIL. */

#define TP_NAME 24                   /* PyTypeObject.tp_name (3.8 to 3.15) */
#define TP_BASICSIZE 32              /* .tp_basicsize */
#define TP_FLAGS 168                 /* .tp_flags */
#define HT_QUALNAME_38 864           /* PyHeapTypeObject.ht_qualname: 3.8, 3.10, 3.11 */
#define HT_QUALNAME_39 856           /* 3.9 */
#define HT_QUALNAME_312 872          /* 3.12, 3.13 */
#define TP_DICT 264                  /* .tp_dict */
#define TPF_HEAPTYPE (1ul << 9)
#define TPF_READY (1ul << 12)
#define TPF_HAVE_GC (1ul << 14)
#define TPF_TYPE_SUBCLASS (1ul << 31)
#define TPF_MANAGED_DICT (1ul << 4)  /* 3.11 on */
#define TPF_MANAGED_WEAKREF (1ul << 3)   /* 3.12 on */
#define GC_HEAD 16                   /* sizeof (PyGC_Head) */
#define TYPE_CACHE 65536             /* words remembered per snapshot (a power of 2) */
#define NAME_MAX_LEN 200             /* of a module, or a qualified name */
/* Live samples read per snapshot, at most (a copy of 32 bytes each, and a
 * read of each block: about a second for a million); with every allocation
 * sampled, the others stay untyped. */
#define TYPES_MAX_SAMPLES ((size_t)1 << 20)

struct type_entry {
	uintptr_t type;      /* 0: empty */
	int32_t name;        /* index into the snapshot's types, -1: not a type */
	uint32_t presize;    /* where its objects start in their blocks */
};

static size_t type_presize(unsigned long flags)
{
	unsigned minor = (unsigned)(mw_py.version >> 16) & 0xff;
	unsigned long pre = minor >= 12 ? TPF_MANAGED_DICT | TPF_MANAGED_WEAKREF : minor == 11 ? TPF_MANAGED_DICT : 0;
	return (flags & TPF_HAVE_GC ? GC_HEAD : 0) + (flags & pre ? 2 * sizeof(void *) : 0);
}

/* Is t a type object? As CPython's PyType_Check: its type is PyType_Type, or
 * a metaclass (a type with Py_TPFLAGS_TYPE_SUBCLASS, itself of type
 * PyType_Type or of another such metaclass). Its flags into *flags. */
static bool is_type(uintptr_t t, unsigned long *flags)
{
	const void *meta, *mm, *w;

	if (!t || (t & 7) || !safe_word((const char *)t + PY_OB_TYPE, &meta) || !meta)
		return false;
	if (meta != mw_py.type_type) {
		if (!safe_word((const char *)meta + TP_FLAGS, &w) || !((uintptr_t)w & TPF_TYPE_SUBCLASS) ||
		    !safe_word((const char *)meta + PY_OB_TYPE, &mm) || !mm)
			return false;
		if (mm != mw_py.type_type &&
		    (!safe_word((const char *)mm + TP_FLAGS, &w) || !((uintptr_t)w & TPF_TYPE_SUBCLASS)))
			return false;
	}
	if (!safe_word((const char *)t + TP_FLAGS, &w))
		return false;
	*flags = (unsigned long)(uintptr_t)w;
	return (*flags & TPF_READY) != 0;
}

/* The text of the str object at p (exactly a str, compact), read by a safe
 * copy: into buf, at most len bytes; 0 when it is not one or cannot be read
 * whole, or holds a control character. */
static size_t safe_str(const void *p, char *buf, size_t len)
{
	char copy[PY_STR_COMPACT_DATA + 4 * NAME_MAX_LEN], text[4 * NAME_MAX_LEN + 4];
	size_t got, n, k;
	int64_t sl;

	if (!p || !safe_type(p, mw_py.unicode_type))
		return 0;
	got = safe_read(p, copy, sizeof copy);
	if (got < lay.str_compact_data)
		return 0;
	/* read_str reads the copy: the length is bounded by what was copied;
	 * the text is read whole (4 bytes of UTF-8 a character at most), and
	 * one longer than len is none (cut short, it would be another name) */
	memcpy(&sl, copy + lay.str_length, sizeof sl);
	if (sl <= 0 || sl > NAME_MAX_LEN || (uint64_t)sl > (got - lay.str_compact_data) / 4)
		return 0;
	n = read_str(copy, text, 4 * (size_t)sl + 4);
	if (n < (size_t)sl || n > len)
		return 0;
	for (k = 0; k < n; k++)
		if ((unsigned char)text[k] < 0x20 || text[k] == 0x7f)
			return 0;
	memcpy(buf, text, n);
	return n;
}

/* Is the str object at p "__module__"? */
static bool is_module_key(const void *p)
{
	char b[16];
	return safe_str(p, b, sizeof b) == 10 && memcmp(b, "__module__", 10) == 0;
}

/* The hash of the str "__module__" in this process (seeded at its start),
 * learnt from the first class dict it is found in; 0 until then. Read and
 * written under the snapshot's lock. */
static int64_t module_hash;

/* The class's module: the str __module__ in the type's dict (tp_dict), read
 * without the GIL as the interpreter's own lookup finds it: the dict's keys
 * (a combined table: a type's dict is never split), their hash table of
 * indices (1, 2, 4 or 8 bytes each, by its size), then the entries they
 * point to (hash, key, value; 3.11 on, a table of str keys only: key,
 * value). Probed by the hash of "__module__" once it is known, else the
 * entries scanned in order (__module__ is the first a class statement sets).
 * Every read is a safe read, every loop bounded, every key compared by its
 * text; the dict's version tag and keys read again at the end must be those
 * it started with (the class not changed meanwhile). Into buf; 0 when any of
 * it is in doubt (the caller then names the type by tp_name). */
static size_t type_module(uintptr_t t, char *buf, size_t len)
{
	const void *dict, *keys, *values, *tag, *again, *value = NULL;
	unsigned char hd[48];
	uint64_t size, nentries, width, esize;
	uintptr_t indices, entries;
	int64_t h = module_hash;
	size_t n, i;

	if (!mw_py.dict_type || !lay.dict_keys ||
	    !safe_word((const char *)t + TP_DICT, &dict) || !dict || !safe_type(dict, mw_py.dict_type) ||
	    !safe_word((const char *)dict + PY_DICT_TAG, &tag) ||
	    !safe_word((const char *)dict + lay.dict_keys, &keys) || !keys ||
	    !safe_word((const char *)dict + lay.dict_values, &values) || values ||
	    safe_read(keys, hd, sizeof hd) != sizeof hd)
		return 0;
	if (lay.dk_log2) {
		unsigned l2 = hd[PY311_DK_LOG2_SIZE], l2i = hd[PY311_DK_LOG2_INDEX_BYTES];
		unsigned kind = hd[PY311_DK_KIND];
		if (l2 < 3 || l2 > 24 || l2i < l2 || l2i - l2 != (l2 < 8 ? 0u : l2 < 16 ? 1u : 2u) || kind > 1)
			return 0;
		size = (uint64_t)1 << l2;
		width = (uint64_t)1 << (l2i - l2);
		esize = kind == 1 ? 2 * sizeof(void *) : 3 * sizeof(void *);
		memcpy(&nentries, hd + PY311_DK_NENTRIES, sizeof nentries);
		indices = (uintptr_t)keys + PY311_DK_INDICES;
	} else {
		memcpy(&size, hd + PY38_DK_SIZE, sizeof size);
		if (size < 8 || size > ((uint64_t)1 << 24) || (size & (size - 1)))
			return 0;
		width = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		esize = 3 * sizeof(void *);
		memcpy(&nentries, hd + PY38_DK_NENTRIES, sizeof nentries);
		indices = (uintptr_t)keys + PY38_DK_INDICES;
	}
	/* at most two thirds of the table are usable entries */
	if (nentries > (size << 1) / 3)
		return 0;
	entries = indices + size * width;

	/* probed: bounded as the table is (a lookup ends at an empty slot) */
	if (h) {
		uint64_t perturb = (uint64_t)h, j = (uint64_t)h & (size - 1);
		for (i = 0; i < 64 && !value; i++) {
			/* an index lies within one aligned word (it is aligned to
			 * its width, at most 4 bytes), read whole as safe_word can */
			uintptr_t at = indices + j * width, e[3];
			const void *w;
			uint64_t v;
			int64_t ix;
			if (!safe_word((const char *)(at & ~(uintptr_t)7), &w))
				break;
			v = (uint64_t)(uintptr_t)w >> (8 * (at & 7));
			ix = width == 1 ? (int8_t)v : width == 2 ? (int16_t)v : (int32_t)v;
			if (ix == -1)
				break;
			if (ix >= 0 && (uint64_t)ix < nentries &&
			    safe_read((const char *)(entries + (uint64_t)ix * esize), e, esize) == esize) {
				/* general entries: hash, key, value; str keys only: key, value */
				bool general = esize == 3 * sizeof(void *);
				const void *k = (const void *)e[general ? 1 : 0];
				if ((!general || (int64_t)e[0] == h) && is_module_key(k))
					value = (const void *)e[general ? 2 : 1];
			}
			perturb >>= 5;
			j = (j * 5 + perturb + 1) & (size - 1);
		}
	}
	/* scanned: the first entries, in the order they were set */
	for (i = 0; !value && i < nentries && i < 1024; i += 32) {
		uintptr_t e[32 * 3];
		size_t m = nentries - i < 32 ? (size_t)(nentries - i) : 32, got, k;
		bool general = esize == 3 * sizeof(void *);
		got = safe_read((const char *)(entries + i * esize), e, m * esize) / esize;
		for (k = 0; k < got && !value; k++) {
			const uintptr_t *x = (const uintptr_t *)((const char *)e + k * esize);
			const void *key = (const void *)x[general ? 1 : 0];
			int64_t kh;
			/* a deleted entry has no key */
			if (!key || !is_module_key(key))
				continue;
			value = (const void *)x[general ? 2 : 1];
			if (general)
				kh = (int64_t)x[0];
			else if (!safe_word((const char *)key + PY_STR_HASH, (const void **)&kh))
				kh = 0;
			if (kh != 0 && kh != -1)
				module_hash = kh;
		}
		if (got < m)
			break;
	}
	if (!value || !(n = safe_str(value, buf, len)))
		return 0;
	/* the dict as it was when read */
	if (!safe_word((const char *)dict + PY_DICT_TAG, &again) || again != tag ||
	    !safe_word((const char *)dict + lay.dict_keys, &again) || again != keys ||
	    !safe_word((const char *)t + TP_DICT, &again) || again != dict)
		return 0;
	return n;
}

/* The name of type t: a class (a heap type) as module.qualname
 * ("__main__.Event", "app.models.Order.Line"; a class of module builtins by
 * its qualified name alone), any other type by its tp_name ("dict",
 * "collections.OrderedDict": a static type's tp_name holds its module), as
 * is a class whose module or qualified name cannot be read for sure. 0: t
 * is not taken for a type (a heap type whose ht_qualname is no str, a
 * tp_name that is not printable ASCII text). */
static size_t type_name(uintptr_t t, unsigned long flags, char *buf, size_t len)
{
	const void *p;
	size_t n, k, m;
	unsigned minor = (unsigned)(mw_py.version >> 16) & 0xff;

	if (flags & TPF_HEAPTYPE) {
		size_t off = mw_py_do.v ? mw_py_do.v->ht_qualname : minor >= 12 ? HT_QUALNAME_312 :
			     minor == 9 ? HT_QUALNAME_39 : HT_QUALNAME_38;
		char qual[NAME_MAX_LEN], mod[NAME_MAX_LEN];
		/* every class has its __qualname__, a str */
		if (!safe_word((const char *)t + off, &p) || !p || !safe_type(p, mw_py.unicode_type))
			return 0;
		if ((n = safe_str(p, qual, sizeof qual)) > 0 && (m = type_module(t, mod, sizeof mod)) > 0) {
			if (m == 8 && memcmp(mod, "builtins", 8) == 0)
				m = 0;
			if ((m ? m + 1 : 0) + n <= len) {
				memcpy(buf, mod, m);
				if (m)
					buf[m++] = '.';
				memcpy(buf + m, qual, n);
				return m + n;
			}
		}
	}
	if (!safe_word((const char *)t + TP_NAME, &p) || !p)
		return 0;
	n = safe_read(p, buf, len);
	for (k = 0; k < n && buf[k]; k++)
		if ((unsigned char)buf[k] < 0x20 || (unsigned char)buf[k] >= 0x7f)
			return 0;
	return k < n ? k : 0;
}

static int name_index(struct snapshot *s, const char *name, size_t n);

/* For pyrefs.c: the name of type t as the types section has it (0: not a
 * type), and the text of a str object (read directly: the caller holds the
 * GIL and the object). */
size_t mw_py_type_name(uintptr_t t, char *buf, size_t len)
{
	unsigned long flags;
	if (!is_type(t, &flags))
		return 0;
	return type_name(t, flags, buf, len);
}

size_t mw_py_read_str(const void *o, char *buf, size_t len)
{
	return read_str(o, buf, len);
}

bool mw_py_safe_word(const void *at, uintptr_t *w)
{
	const void *v;
	if (!safe_word(at, &v))
		return false;
	*w = (uintptr_t)v;
	return true;
}

/* The size of a str object: its header and its characters (as sys.getsizeof
 * counts a compact one); 0 when it is not compact. */
size_t mw_py_str_size(const void *o)
{
	uint32_t state = *(const uint32_t *)((const char *)o + lay.str_state);
	size_t n = (size_t)*(const int64_t *)((const char *)o + lay.str_length);
	if (!(state & (1u << 5)))
		return 0;
	if (state & (1u << 6))
		return lay.str_ascii_data + n + 1;
	return lay.str_compact_data + (n + 1) * ((state >> 2) & 7);
}

int mw_py_name_index(struct snapshot *s, const char *name, size_t n)
{
	return name_index(s, name, n);
}

static int name_index(struct snapshot *s, const char *name, size_t n)
{
	char **x;
	for (size_t i = 0; i < s->ntypes; i++)
		if (strlen(s->types[i]) == n && memcmp(s->types[i], name, n) == 0)
			return (int)i;
	x = realloc(s->types, (s->ntypes + 1) * sizeof *x);
	if (!x)
		return -2;
	s->types = x;
	x[s->ntypes] = strndup(name, n);
	if (!x[s->ntypes])
		return -2;
	return (int)s->ntypes++;
}

/* What t is, from the cache (direct-mapped: a word that is not a type, met
 * once, is soon overwritten; the few types stay) or read now. */
static struct type_entry *type_lookup(struct type_entry *cache, struct snapshot *s, uintptr_t t)
{
	static struct type_entry none = { 0, -1, 0 };
	size_t j = (size_t)((t >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (TYPE_CACHE - 1);
	unsigned long flags;
	char name[2 * NAME_MAX_LEN + 1];
	size_t n;

	if (t < 4096 || (t & 7))
		return &none;
	if (cache[j].type == t)
		return &cache[j];
	cache[j].type = t;
	cache[j].name = -1;
	cache[j].presize = 0;
	if (is_type(t, &flags) && (n = type_name(t, flags, name, sizeof name)) > 0) {
		name[n < sizeof name ? n : sizeof name - 1] = '\0';
		n = mw_pyfree_mark(name, name, n, sizeof name);   /* still recycled? */
		cache[j].name = name_index(s, name, n);
		cache[j].presize = (uint32_t)type_presize(flags);
	}
	return &cache[j];
}

/* The type of the object in the block at a: its name index, -1 none (not an
 * object), -2 unreadable, -3 out of memory. The object's address into *obj. */
static int block_type(struct type_entry *cache, struct snapshot *s, uintptr_t a, uintptr_t *obj)
{
	uintptr_t w[6];
	size_t got = safe_read((const char *)a, w, sizeof w), o;

	if (got < 2 * sizeof(void *))
		return -2;
	for (o = 0; o <= 32 && o + 2 * sizeof(void *) <= got; o += GC_HEAD) {
		struct type_entry *e = type_lookup(cache, s, w[o / 8 + 1]);
		if (e->name == -2)
			return -3;
		if (e->name >= 0 && e->presize == o) {
			*obj = a + o;
			return e->name;
		}
	}
	return -1;
}

struct typed_key {
	uint64_t key;        /* stack << 32 | type index + 1; 0 empty */
	size_t at;           /* index into s->typed */
};

int mw_python_types(struct snapshot *s)
{
	struct mw_live_copy *live = NULL;
	struct type_entry *cache = NULL;
	struct typed_key *idx = NULL;
	size_t n = 0, i, cap;
	int not_obj = -1, unread = -1, r = -1;

	if (!mw_python_frames || !mw_py.type_type || !mw_py.unicode_type)
		return 0;
	mw_tls.guard++;
	if (mw_heap_copy_live(&live, &n, TYPES_MAX_SAMPLES) < 0)
		goto out;
	for (cap = 64; cap < 2 * n + 2; cap *= 2)
		;
	cache = calloc(TYPE_CACHE, sizeof *cache);
	idx = calloc(cap, sizeof *idx);
	s->typed = calloc(n ? n : 1, sizeof *s->typed);
	if (!cache || !idx || !s->typed)
		goto out;
	if (!s->types && !(s->types = calloc(1, sizeof *s->types)))
		goto out;
	mw_pyrefs_note(s, SIZE_MAX, 0);
	for (i = 0; i < n; i++) {
		const struct mw_live_copy *l = &live[i];
		int t;
		uint64_t key;
		size_t j;

		if (l->stack >= s->nstacks || snap_stack_kind(s->stacks[l->stack].flags) != SNAP_KIND_MALLOC)
			continue;
		uintptr_t obj = 0;
		t = block_type(cache, s, l->addr, &obj);
		if (t == -3)
			goto out;
		if (t == -1) {
			char no[32] = SNAP_TYPE_NOT_OBJECT;
			if (not_obj < 0 && (not_obj = name_index(s, no, mw_pyfree_mark(NULL, no, strlen(no), sizeof no))) < 0)
				goto out;
			t = not_obj;
		} else if (t == -2) {
			if (unread < 0 && (unread = name_index(s, SNAP_TYPE_UNREADABLE, strlen(SNAP_TYPE_UNREADABLE))) < 0)
				goto out;
			t = unread;
		}
		key = (uint64_t)l->stack << 32 | (uint32_t)(t + 1);
		for (j = (size_t)(mw_splitmix64(key) & (cap - 1)); idx[j].key && idx[j].key != key; j = (j + 1) & (cap - 1))
			;
		if (!idx[j].key) {
			idx[j].key = key;
			idx[j].at = s->ntyped;
			memset(&s->typed[s->ntyped], 0, sizeof s->typed[0]);
			s->typed[s->ntyped].stack = l->stack;
			s->typed[s->ntyped].type = (uint32_t)t;
			s->ntyped++;
		}
		if (obj && s->typed[idx[j].at].live_samples < 2)
			mw_pyrefs_note(s, idx[j].at, obj);
		s->typed[idx[j].at].live_samples++;
		s->typed[idx[j].at].live_bytes += l->bytes;
		/* blocks summed in fixed point, rounded below */
		s->typed[idx[j].at].live_blocks += l->blocks_fx;
	}
	for (i = 0; i < s->ntyped; i++)
		s->typed[i].live_blocks = (uint64_t)((double)s->typed[i].live_blocks / FX + 0.5);
	r = 0;
out:
	if (r < 0) {
		free(s->typed);
		s->typed = NULL;
		s->ntyped = 0;
	}
	if (!s->ntypes) {
		free(s->types);
		s->types = NULL;
	}
	free(live);
	free(cache);
	free(idx);
	mw_tls.guard--;
	return r;
}
