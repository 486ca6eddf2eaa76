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
#include "pyframes.h"
#include "pyversions.h"
#include "snapshot.h"

struct pyf_layout pyf_lay;

/* The frame walk's offsets of 3.11 and 3.12, fixed for each: the walk is
 * compiled once for each of them with these as constants (read_frames), so
 * that at every sample no offset is loaded nor a feature of another version
 * tested per frame. */
static const struct pyf_layout walk311 = {
	.cframe = true,
	.ts_frame = PY_TSTATE_CFRAME,
	.cf_current = PY_CFRAME_CURRENT,
	.f_previous = PY_FRAME_PREVIOUS,
	.f_code = PY_FRAME_CODE,
	.f_instr = PY_FRAME_PREV_INSTR,
	.f_entry = PY_FRAME_IS_ENTRY,
	.co_filename = PY_CODE_FILENAME,
	.co_qualname = PY_CODE_QUALNAME,
	.co_adaptive = PY_CODE_ADAPTIVE,
	.co_firsttraceable = PY_CODE_FIRSTTRACEABLE,
};
static const struct pyf_layout walk312 = {
	.cframe = true,
	.ts_frame = PY312_TSTATE_CFRAME,
	.cf_current = PY312_CFRAME_CURRENT,
	.f_previous = PY312_FRAME_PREVIOUS,
	.f_code = PY312_FRAME_CODE,
	.f_instr = PY312_FRAME_PREV_INSTR,
	.f_owner = PY312_FRAME_OWNER,
	.owner_entry = PY312_OWNED_BY_CSTACK,
	.owner_max = PY312_OWNED_BY_CSTACK,
	.co_filename = PY312_CODE_FILENAME,
	.co_qualname = PY312_CODE_QUALNAME,
	.co_adaptive = PY312_CODE_ADAPTIVE,
	.co_firsttraceable = PY312_CODE_FIRSTTRACEABLE,
};
static unsigned walk_fixed;   /* 0x030b, 0x030c: pyf_lay is walk311's, walk312's */

/* The str layout of 3.8 to 3.11 (with wstr), and 3.12's (without). */
static void str_layout(bool wstr)
{
	pyf_lay.str_state = PY_STR_STATE;
	pyf_lay.str_length = PY_STR_LENGTH;
	pyf_lay.str_ascii_data = wstr ? PY_STR_ASCII_DATA : PY312_STR_ASCII_DATA;
	pyf_lay.str_compact_data = wstr ? PY_STR_COMPACT_DATA : PY312_STR_COMPACT_DATA;
	pyf_lay.str_ready_bit = wstr;
}

/* The dict layout of 3.8 to 3.10 (dk_size, the index width from it) and of
 * 3.11 and 3.12 (dk_log2_size, dk_log2_index_bytes, dk_kind). */
static void dict_layout(bool log2)
{
	pyf_lay.dict_keys = PY_DICT_KEYS;
	pyf_lay.dict_values = PY_DICT_VALUES;
	pyf_lay.dk_log2 = log2;
}

bool mw_py_layout(const char *runtime)
{
	unsigned minor = (unsigned)(mw_py.version >> 16);

	memset(&pyf_lay, 0, sizeof pyf_lay);
	walk_fixed = 0;
	if (minor >= 0x0308 && minor <= 0x030a) {
		pyf_lay.frameobj = true;
		pyf_lay.ts_frame = PY38_TSTATE_FRAME;
		pyf_lay.f_previous = PY38_FRAME_BACK;
		pyf_lay.f_code = PY38_FRAME_CODE;
		pyf_lay.f_instr = minor == 0x030a ? PY310_FRAME_LASTI : PY38_FRAME_LASTI;
		pyf_lay.lasti_unit = minor == 0x030a ? 2 : 1;
		pyf_lay.co_filename = PY38_CODE_FILENAME;
		pyf_lay.co_qualname = PY38_CODE_NAME;
		pyf_lay.co_firstlineno = PY38_CODE_FIRSTLINENO;
		pyf_lay.co_lines = PY38_CODE_LNOTAB;
		pyf_lay.lines = minor == 0x030a ? LINES_LINETABLE310 : LINES_LNOTAB;
		str_layout(true);
		dict_layout(false);
		return true;
	}
	if (minor == 0x030b) {
		pyf_lay = walk311;
		walk_fixed = 0x030b;
		pyf_lay.lines = LINES_ADDR2LINE;
		str_layout(true);
		dict_layout(true);
		return true;
	}
	if (minor == 0x030c) {
		pyf_lay = walk312;
		walk_fixed = 0x030c;
		pyf_lay.lines = LINES_ADDR2LINE;
		str_layout(false);
		dict_layout(true);
		return true;
	}
	/* 3.13 on: from the interpreter's own table, which must say it
	 * describes this very build */
	if (!mw_py_debug_offsets(runtime))
		return false;
	pyf_lay.ts_frame = mw_py_do.ts_current_frame;
	pyf_lay.f_previous = mw_py_do.frame_previous;
	pyf_lay.f_code = mw_py_do.frame_executable;
	pyf_lay.f_instr = mw_py_do.frame_instr_ptr;
	pyf_lay.f_owner = mw_py_do.frame_owner;
	pyf_lay.owner_entry = mw_py_do.v->owner_entry;
	pyf_lay.owner_max = mw_py_do.v->owner_max;
	pyf_lay.code_tag = mw_py_do.v->executable_tag;
	pyf_lay.co_filename = mw_py_do.code_filename;
	pyf_lay.co_qualname = mw_py_do.code_qualname;
	pyf_lay.co_adaptive = mw_py_do.code_adaptive;
	pyf_lay.lines = LINES_ADDR2LINE;
	pyf_lay.str_state = mw_py_do.str_state;
	pyf_lay.str_length = mw_py_do.str_length;
	pyf_lay.str_ascii_data = mw_py_do.str_ascii_size;
	/* PyCompactUnicodeObject: utf8_length and utf8 after PyASCIIObject */
	pyf_lay.str_compact_data = pyf_lay.str_ascii_data + 2 * sizeof(void *);
	pyf_lay.str_ready_bit = false;
	pyf_lay.dict_keys = mw_py_do.dict_keys;
	pyf_lay.dict_values = mw_py_do.dict_values;
	pyf_lay.dk_log2 = true;
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
size_t pyf_read_str(const char *o, char *buf, size_t len)
{
	uint32_t state;
	size_t n, i, k = 0;
	unsigned kind;
	const char *data;

	if (!o)
		return 0;
	state = *(const uint32_t *)(o + pyf_lay.str_state);
	n = (size_t)*(const int64_t *)(o + pyf_lay.str_length);
	if (!(state & (1u << 5)) || (pyf_lay.str_ready_bit && !(state & (1u << 7))))
		return 0;                                     /* not compact, or not ready */
	kind = (state >> 2) & 7;
	if (state & (1u << 6)) {                              /* compact ASCII */
		if (n > len)
			n = len;
		memcpy(buf, o + pyf_lay.str_ascii_data, n);
		return n;
	}
	data = o + pyf_lay.str_compact_data;
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
	size_t nn = pyf_read_str(*(const char *const *)(code + pyf_lay.co_qualname), name, sizeof name);
	size_t fn = pyf_read_str(*(const char *const *)(code + pyf_lay.co_filename), file, sizeof file);
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
	const char *tab = *(const char *const *)(code + pyf_lay.co_lines);
	int line = *(const int *)(code + pyf_lay.co_firstlineno);
	const signed char *p;
	int64_t size;
	int start, end = 0;

	if (!tab || addr < 0)
		return line;
	size = *(const int64_t *)(tab + PY_BYTES_SIZE);
	if (size < 0 || size > (1 << 24))
		return 0;
	p = (const signed char *)(tab + PY_BYTES_DATA);
	if (pyf_lay.lines == LINES_LNOTAB) {
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
	uintptr_t name = *(const uintptr_t *)(code + pyf_lay.co_qualname);
	uintptr_t file = *(const uintptr_t *)(code + pyf_lay.co_filename);
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
	line = pyf_lay.frameobj ? frameobj_line(code, off) : mw_py.addr2line((void *)code, off);
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

/* The signature of a thread's frames (see read_frames): two chains of
 * multiplies, side by side, over the words that decide its frames. */
struct pyf_sig {
	uint64_t a, b;
};

static inline void sig_add(struct pyf_sig *g, const char *code, uintptr_t at)
{
	g->a = (g->a ^ (uintptr_t)code) * 0x9E3779B97F4A7C15ull;
	g->a ^= g->a >> 29;
	g->b = (g->b ^ at) * 0xC2B2AE3D27D4EB4Full;
	g->b ^= g->b >> 31;
}

/* A frame's code object and the name and file it names (a code object freed
 * and another made at its address runs under other names, most often). */
static inline __attribute__((always_inline)) void sig_code(struct pyf_sig *g, const struct pyf_layout *L,
								const char *code, uintptr_t at)
{
	uintptr_t name = *(const uintptr_t *)(code + L->co_qualname);
	uintptr_t file = *(const uintptr_t *)(code + L->co_filename);
	sig_add(g, code, at ^ (name << 1) ^ (file << 17) ^ (file >> 47));
}

/* 3.11 on: the chain of _PyInterpreterFrame from the thread state's frame f,
 * laid out as L says (a constant where the version's layout is fixed); the
 * frames into out (or, out NULL, only their signature into g). */
static inline __attribute__((always_inline)) unsigned walk_frames(const struct pyf_layout *L, const char *f,
								   struct pyf_ref *out, unsigned max,
								   struct pyf_sig *g)
{
	const void *code_type = mw_py.code_type;
	unsigned n = 0;

	if (L->cframe && f)
		f = *(const char *const *)(f + L->cf_current);
	for (; f && n < max; f = *(const char *const *)(f + L->f_previous)) {
		const char *code, *instr, *first;
		bool entry = L->f_entry && *(const bool *)(f + L->f_entry);
		/* 3.12+: each C call of the eval loop starts its frames with one
		 * of its own (on the C stack), which runs no code */
		if (L->f_owner && *(const unsigned char *)(f + L->f_owner) >= L->owner_entry) {
			if (n) {
				sig_add(g, NULL, 2);
				if (out)
					out[n - 1].entry = true;
			}
			continue;
		}
		code = (const char *)(*(const uintptr_t *)(f + L->f_code) & ~L->code_tag);
		if (!code || (code_type && *(const void *const *)(code + PY_OB_TYPE) != code_type))
			continue;
		instr = *(const char *const *)(f + L->f_instr);
		first = code + L->co_adaptive;
		sig_code(g, L, code, (uintptr_t)instr ^ (uintptr_t)entry << 63);
		/* a frame still being set up has run nothing yet: not shown, but
		 * its entry mark still ends its C call's frames */
		if (L->co_firsttraceable &&
		    instr < first + (ptrdiff_t)*(const int *)(code + L->co_firsttraceable) * 2) {
			if (entry && n && out)
				out[n - 1].entry = true;
			continue;
		}
		if (out) {
			out[n].id = frame_at(code, (int)(instr - first));
			out[n].entry = entry;
		}
		n++;
	}
	return n;
}

/* Read this thread's Python frames, newest first; or (out NULL) only their
 * signature: a hash of every word the frames read here were decided by (each
 * frame's code object, its name and file, its instruction, its entry mark),
 * into *sig, in both ways alike (never 0). */
static unsigned read_frames(struct pyf_ref *out, unsigned max, uint64_t *sig)
{
	const char *ts, *f;
	unsigned n = 0;
	struct pyf_sig g = { 0x243F6A8885A308D3ull, 0x13198A2E03707344ull };

	*sig = 1;
	if (!mw_python_frames || mw_py.is_finalizing())
		return 0;
	ts = mw_py.this_tstate();
	if (!ts)
		return 0;
	f = *(const char *const *)(ts + pyf_lay.ts_frame);
	if (pyf_lay.frameobj) {
		/* one C call of the eval loop per frame: each is its own entry */
		for (; f && n < max; f = *(const char *const *)(f + pyf_lay.f_previous)) {
			const char *code = *(const char *const *)(f + pyf_lay.f_code);
			int lasti = *(const int *)(f + pyf_lay.f_instr);
			if (!code || *(const void *const *)(code + PY_OB_TYPE) != mw_py.code_type)
				continue;
			sig_code(&g, &pyf_lay, code, (uint32_t)lasti);
			if (out) {
				out[n].id = frame_at(code, lasti < 0 ? -1 : lasti * pyf_lay.lasti_unit);
				out[n].entry = true;
			}
			n++;
		}
		*sig = mw_splitmix64(g.a ^ (g.b << 1) ^ n) | 1;
		return n;
	}
	if (walk_fixed == 0x030b)
		n = walk_frames(&walk311, f, out, max, &g);
	else if (walk_fixed == 0x030c)
		n = walk_frames(&walk312, f, out, max, &g);
	else
		n = walk_frames(&pyf_lay, f, out, max, &g);
	*sig = mw_splitmix64(g.a ^ (g.b << 1) ^ n) | 1;
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

bool pyf_safe_word(const char *at, const void **w)
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

/* n bytes at at into buf, as pyf_safe_word reads; how many could be read (a
 * read that crosses into an unmapped page stops there). */
size_t pyf_safe_read(const char *at, void *buf, size_t n)
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
	/* word by word, as pyf_safe_word falls back to */
	for (k = 0; k + sizeof(void *) <= n; k += sizeof(void *)) {
		const void *w;
		if (((uintptr_t)at & (sizeof w - 1)) || !pyf_safe_word(at + k, &w))
			break;
		memcpy((char *)buf + k, &w, sizeof w);
	}
	return k;
}

bool pyf_safe_type(const char *obj, const void *type)
{
	const void *t;
	return type && pyf_safe_word(obj + PY_OB_TYPE, &t) && t == type;
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
		if (!pyf_safe_word(ts + pyf_lay.ts_frame, (const void **)&f) ||
		    (f && pyf_lay.cframe && !pyf_safe_word(f + pyf_lay.cf_current, (const void **)&f)))
			f = NULL;
		for (k = 0; f && k < 1024; k++) {
			bool skip = false;
			if (pyf_lay.f_owner) {
				const void *ow;
				unsigned char owner;
				if (!pyf_safe_word((const char *)((uintptr_t)(f + pyf_lay.f_owner) & ~(uintptr_t)7), &ow))
					break;
				memcpy(&owner, (const char *)&ow + ((uintptr_t)(f + pyf_lay.f_owner) & 7), 1);
				skip = owner >= pyf_lay.owner_entry;
			}
			if (!skip && pyf_safe_word(f + pyf_lay.f_code, (const void **)&code) &&
			    (code = (const char *)((uintptr_t)code & ~pyf_lay.code_tag)) &&
			    pyf_safe_type(code, mw_py.code_type) && fn(f, code, arg))
				return;
			if (!pyf_safe_word(f + pyf_lay.f_previous, (const void **)&f))
				break;
		}
		if (!pyf_safe_word(ts + PY_TSTATE_NEXT, (const void **)&ts))
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
	    (pyf_lay.frameobj && !mw_py.bytes_type)) {
		snprintf(why, len, "the functions to list its threads are missing");
		return -1;
	}
	interp = mw_py.interp_head();
	/* the list is followed by safe reads (PyThreadState.next): a thread may
	 * end meanwhile */
	for (ts = interp ? mw_py.thread_head(interp) : NULL; ts && threads < CHECK_THREADS; threads++) {
		if (!pyf_safe_word(ts + PY_TSTATE_INTERP, (const void **)&w) || w != interp) {
			snprintf(why, len, "a thread state does not name its interpreter where expected");
			return -1;
		}
		if (!pyf_safe_word(ts + pyf_lay.ts_frame, (const void **)&f) ||
		    (f && pyf_lay.cframe && !pyf_safe_word(f + pyf_lay.cf_current, (const void **)&f))) {
			snprintf(why, len, "a thread state's frame is not readable");
			return -1;
		}
		for (k = 0; f && k < CHECK_FRAMES; k++) {
			if (pyf_lay.f_owner) {
				const void *ow;
				unsigned char owner;
				if (!pyf_safe_word((const char *)((uintptr_t)(f + pyf_lay.f_owner) & ~(uintptr_t)7), &ow)) {
					snprintf(why, len, "a frame is not readable");
					return -1;
				}
				memcpy(&owner, (const char *)&ow + ((uintptr_t)(f + pyf_lay.f_owner) & 7), 1);
				if (owner > pyf_lay.owner_max) {
					snprintf(why, len, "a frame's owner is %u, not one of 0 to %u", owner,
						 pyf_lay.owner_max);
					return -1;
				}
				if (owner >= pyf_lay.owner_entry)
					goto next;
			}
			if (!pyf_safe_word(f + pyf_lay.f_code, (const void **)&code) ||
			    !(code = (const char *)((uintptr_t)code & ~pyf_lay.code_tag))) {
				snprintf(why, len, "a frame's code is not readable");
				return -1;
			}
			if (!pyf_safe_type(code, mw_py.code_type)) {
				snprintf(why, len, "a frame's code object is not of the code type");
				return -1;
			}
			if (!pyf_safe_word(code + pyf_lay.co_filename, (const void **)&w) || !pyf_safe_type(w, mw_py.unicode_type) ||
			    !pyf_safe_word(code + pyf_lay.co_qualname, (const void **)&w) || !pyf_safe_type(w, mw_py.unicode_type)) {
				snprintf(why, len, "a code object's file or name is not a str");
				return -1;
			}
			if (pyf_lay.frameobj &&
			    (!pyf_safe_word(code + pyf_lay.co_lines, (const void **)&w) || !pyf_safe_type(w, mw_py.bytes_type))) {
				snprintf(why, len, "a code object's line table is not a bytes object");
				return -1;
			}
			frames++;
		next:
			if (!pyf_safe_word(f + pyf_lay.f_previous, (const void **)&f)) {
				snprintf(why, len, "a frame's caller is not readable");
				return -1;
			}
		}
		if (!pyf_safe_word(ts + PY_TSTATE_NEXT, (const void **)&ts)) {
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

unsigned mw_python_merge(const uintptr_t *ips, unsigned n, uintptr_t *out, unsigned max, uint64_t *sig)
{
	struct pyf_ref pf[PY_MAX_FRAMES];
	unsigned np, pi = 0, k = 0, i;

	if (!out) {
		read_frames(NULL, PY_MAX_FRAMES, sig);
		return 0;
	}
	np = read_frames(pf, PY_MAX_FRAMES, sig);

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
