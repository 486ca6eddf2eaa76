/* test_rows.c: unit tests for the rows of the reports (src/rows*.c) on stacks
 * made up here, with embedded symbols (so nothing is looked up on this
 * machine): stacks that differ only in the frames a report hides (a CPython
 * interpreter's, the C++ standard library's, the path from a line to the
 * allocator) are one row, their figures summed and their standard error
 * taken from all their samples; --all-frames splits them again; what a row
 * passes over and leaves out is said over all its stacks; a stack whose
 * hidden frames would leave an impossible caller says so; the frames of a
 * merged row in whole stacks (folded, JSON, pprof) are those its stacks
 * share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report-internal.h"
#include "snapshot.h"
#include "symbolize.h"
#include "util.h"

/* The modules of the made-up process. */
enum { M_PY, M_LIBC, M_PYFRAMES, M_APP, NMOD };
static const char *const mod_paths[NMOD] = {
	"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
	"/usr/lib/x86_64-linux-gnu/libc.so.6",
	"[python]",
	"/opt/app/cache",
};

/* One address: its module and offset, and its source frames (inlined first). */
struct addr {
	uint32_t module;
	uint64_t offset;
	const char *fn[3], *file[3];
	uint32_t line[3];
};

enum {
	A_PYMALLOC, A_TUPLE, A_DICTRESIZE, A_INSERTDICT, A_HOARD10, A_HOARD9, A_MAIN, A_MODULE,
	A_EVALCODE, A_BYTESMAIN, A_LIBCSTART, A_PUSHBACK, A_STORE, A_STDFUNCTION, A_CXXMAIN,
	A_LEAKFN, A_JIT1, A_JIT2, A_LOAD, A_STDINVOKE, NADDR
};
static const struct addr addrs[NADDR] = {
	[A_PYMALLOC] = { M_PY, 0x100, { "_PyObject_Malloc", "PyObject_Malloc" },
			 { "obmalloc.c", "obmalloc.c" }, { 1645, 712 } },
	[A_TUPLE] = { M_PY, 0x200, { "PyTuple_New" }, { "tupleobject.c" }, { 75 } },
	[A_DICTRESIZE] = { M_PY, 0x300, { "dictresize" }, { "dictobject.c" }, { 1429 } },
	[A_INSERTDICT] = { M_PY, 0x310, { "insertdict" }, { "dictobject.c" }, { 1248 } },
	[A_HOARD10] = { M_PYFRAMES, 0x400, { "Hoard.hoard_tuples" }, { "hoard.py" }, { 10 } },
	[A_HOARD9] = { M_PYFRAMES, 0x430, { "Hoard.hoard_tuples" }, { "hoard.py" }, { 9 } },
	[A_MAIN] = { M_PYFRAMES, 0x410, { "main" }, { "hoard.py" }, { 18 } },
	[A_MODULE] = { M_PYFRAMES, 0x420, { "<module>" }, { "hoard.py" }, { 22 } },
	[A_EVALCODE] = { M_PY, 0x500, { "PyEval_EvalCode" }, { "ceval.c" }, { 1154 } },
	[A_BYTESMAIN] = { M_PY, 0x510, { "Py_BytesMain" }, { "main.c" }, { 734 } },
	[A_LIBCSTART] = { M_LIBC, 0x600, { "__libc_start_call_main" }, { "libc_start_call_main.h" },
			  { 58 } },
	[A_PUSHBACK] = { M_APP, 0x700,
			 { "std::__new_allocator<int>::allocate(unsigned long, void const*)",
			   "std::vector<int, std::allocator<int> >::push_back(int const&)",
			   "Cache::store(int)" },
			 { "new_allocator.h", "stl_vector.h", "cache.cc" }, { 151, 1287, 21 } },
	[A_STORE] = { M_APP, 0x800, { "Cache::store(int)" }, { "cache.cc" }, { 21 } },
	[A_STDFUNCTION] = { M_APP, 0x900, { "std::function<void ()>::operator()() const" },
			    { "std_function.h" }, { 591 } },
	[A_CXXMAIN] = { M_APP, 0x810, { "main" }, { "cache.cc" }, { 30 } },
	[A_LEAKFN] = { M_APP, 0x950, { "leak_fn" }, { "jit.c" }, { 10 } },
	/* two copies of one JavaScript function that a JIT compiled at two
	 * places, named from its perf map, in no module */
	[A_JIT1] = { SNAP_NO_MODULE, 0x7f0000001010, { "LazyCompile:*handleRequest server.js:42" } },
	[A_JIT2] = { SNAP_NO_MODULE, 0x7f0000052230, { "LazyCompile:*handleRequest server.js:42" } },
	[A_LOAD] = { M_APP, 0xa00, { "Cache::load(int)" }, { "cache.cc" }, { 40 } },
	[A_STDINVOKE] = { M_APP, 0xa10, { "void std::__invoke_impl<void, void (*&)()>(std::__invoke_other, void (*&)())" },
			  { "invoke.h" }, { 61 } },
};

#define RATE 524288

/* The stacks of the made-up snapshots, innermost first, and their figures. */
struct mstack {
	int a[10];
	int n;
	uint64_t bytes, blocks, samples;
};
enum {
	S_TUPLE, S_DICT, S_NATIVE, S_LINE9, S_CXX_VECTOR, S_CXX_NEW, S_CXX_FUNCTION, S_JIT1, S_JIT2,
	S_LOAD_FUNCTION, S_LOAD_INVOKE, NSTACKS
};
static const struct mstack stacks[NSTACKS] = {
	/* line 10 through the tuple path and through the dict's */
	[S_TUPLE] = { { A_PYMALLOC, A_TUPLE, A_HOARD10, A_MAIN, A_MODULE, A_EVALCODE, A_BYTESMAIN,
			A_LIBCSTART }, 8, 1000000, 10000, 5 },
	[S_DICT] = { { A_PYMALLOC, A_DICTRESIZE, A_INSERTDICT, A_HOARD10, A_MAIN, A_MODULE,
		       A_EVALCODE, A_BYTESMAIN, A_LIBCSTART }, 9, 3000000, 300, 7 },
	/* a CPython read natively only: nothing of the user's */
	[S_NATIVE] = { { A_PYMALLOC, A_TUPLE, A_EVALCODE, A_BYTESMAIN, A_LIBCSTART }, 5, 500000,
		       5000, 2 },
	/* another line of the same method */
	[S_LINE9] = { { A_PYMALLOC, A_HOARD9, A_MAIN, A_MODULE, A_EVALCODE, A_BYTESMAIN,
			A_LIBCSTART }, 7, 200000, 2000, 1 },
	/* C++: one line through std::vector, through operator new (trimmed:
	 * nothing above), and through std::function below it */
	[S_CXX_VECTOR] = { { A_PUSHBACK, A_CXXMAIN, A_LIBCSTART }, 3, 4096, 1, 1 },
	[S_CXX_NEW] = { { A_STORE, A_CXXMAIN, A_LIBCSTART }, 3, 80000, 20, 1 },
	[S_CXX_FUNCTION] = { { A_STORE, A_STDFUNCTION, A_CXXMAIN, A_LIBCSTART }, 4, 8000, 2, 1 },
	/* called from either copy of the JIT's function */
	[S_JIT1] = { { A_LEAKFN, A_JIT1, A_CXXMAIN, A_LIBCSTART }, 4, 1048576, 1, 1 },
	[S_JIT2] = { { A_LEAKFN, A_JIT2, A_CXXMAIN, A_LIBCSTART }, 4, 2097152, 1, 1 },
	/* called from main through one std:: frame or through another */
	[S_LOAD_FUNCTION] = { { A_LOAD, A_STDFUNCTION, A_CXXMAIN, A_LIBCSTART }, 4, 7000, 7, 7 },
	[S_LOAD_INVOKE] = { { A_LOAD, A_STDINVOKE, A_CXXMAIN, A_LIBCSTART }, 4, 3000, 3, 3 },
};

/* A snapshot with the stacks whose bits are in mask, each with its figures
 * times scale. */
static struct snapshot *made_up(unsigned mask, uint64_t scale)
{
	struct snapshot *s = xcalloc(1, sizeof *s);
	size_t i;

	s->version = SNAPSHOT_VERSION;
	s->pid = 4242;
	s->exe = xstrdup("/usr/bin/python3.11");
	s->cmdline = xstrdup("python3 hoard.py");
	s->sample_rate = RATE;
	s->nmodules = NMOD;
	s->modules = xcalloc(NMOD, sizeof *s->modules);
	for (i = 0; i < NMOD; i++) {
		s->modules[i].path = xstrdup(mod_paths[i]);
		s->modules[i].bias = 0x100000 * (i + 1);
		s->modules[i].lo = s->modules[i].bias;
		s->modules[i].hi = s->modules[i].bias + 0x10000;
	}
	s->nsymbols = NADDR;
	s->symbols = xcalloc(NADDR, sizeof *s->symbols);
	for (i = 0; i < NADDR; i++) {
		struct snap_symbol *y = &s->symbols[i];
		uint32_t n = 0;
		while (n < 3 && addrs[i].fn[n])
			n++;
		y->module = addrs[i].module;
		y->offset = addrs[i].offset;
		y->nframes = n;
		y->frames = xcalloc(n, sizeof *y->frames);
		for (uint32_t j = 0; j < n; j++) {
			y->frames[j].function = xstrdup(addrs[i].fn[j]);
			y->frames[j].file = addrs[i].file[j] ? xstrdup(addrs[i].file[j]) : NULL;
			y->frames[j].line = addrs[i].line[j];
		}
	}
	s->stacks = xcalloc(NSTACKS, sizeof *s->stacks);
	for (i = 0; i < NSTACKS; i++) {
		const struct mstack *m = &stacks[i];
		struct snap_stack *st;
		if (!(mask & (1u << i)))
			continue;
		st = &s->stacks[s->nstacks++];
		st->nframes = (uint32_t)m->n;
		st->frames = xcalloc((size_t)m->n, sizeof *st->frames);
		for (int j = 0; j < m->n; j++) {
			st->frames[j].module = addrs[m->a[j]].module;
			st->frames[j].offset = addrs[m->a[j]].offset;
		}
		st->live_bytes = st->alloc_bytes = m->bytes * scale;
		st->live_blocks = st->alloc_blocks = m->blocks * scale;
		st->live_samples = m->samples * scale;
	}
	return s;
}

#define ALL ((1u << NSTACKS) - 1)

/* A report of one snapshot (mask b, no second: a show), or of the diff from
 * mask a to mask b, with the rows collected and finished. */
struct fixture {
	struct report_options o;
	struct report r;
};

static void report_of(struct fixture *x, int nin, unsigned a, unsigned b)
{
	x->r.o = &x->o;
	x->r.z = symbolizer_new(NULL, 0);
	x->r.nin = nin;
	x->r.in[0].s = made_up(nin == 2 ? a : b, 1);
	if (nin == 2)
		x->r.in[1].s = made_up(b, 2);
	for (int k = 0; k < nin; k++)
		x->r.in[k].map = symbolizer_add(x->r.z, x->r.in[k].s);
	for (int k = 0; k < nin; k++)
		collect(&x->r, k);
	for (size_t i = 0; i < x->r.nrows; i++)
		row_finish(&x->r.rows[i], nin == 2, x->o.sample);
}

/* The defaults of diff and show (report.c's report_options_init). */
static void options_init(struct report_options *o)
{
	memset(o, 0, sizeof *o);
	o->top = 10;
	o->depth = 5;
}

static void fixture_free(struct fixture *x)
{
	rows_free(&x->r);
	for (int k = 0; k < x->r.nin; k++) {
		snapshot_free(x->r.in[k].s);
		free(x->r.in[k].map);
	}
	symbolizer_free(x->r.z);
	if (x->o.has_focus)
		regfree(&x->o.focus);
	memset(x, 0, sizeof *x);
}

/* The row whose head (in tables) is fn at line (0: any), the kth such (from
 * 0), or NULL. */
static struct row *row_at(struct fixture *x, const char *fn, uint32_t line, int k)
{
	for (size_t i = 0; i < x->r.nrows; i++) {
		struct dframe *d;
		size_t n = row_frames(&x->r, &x->r.rows[i], 1, false, &d, NULL, NULL, NULL, 0);
		bool hit = n && d[0].function && !strcmp(d[0].function, fn) &&
			   (!line || d[0].line == line);
		free(d);
		if (hit && k-- == 0)
			return &x->r.rows[i];
	}
	return NULL;
}

/* The variance of one made-up stack's estimate, as rows-rank.c takes it. */
static double variance(const struct mstack *m, uint64_t scale)
{
	double e = (double)(m->bytes * scale), s = e / (double)(m->blocks * scale);
	return e * e * exp(-s / RATE) / (double)(m->samples * scale);
}

/* The frames of a row in tables, as "function:line|..." with "(gap N-M)"
 * after a frame below which frames are left out; and what its head passed
 * over. */
static void table_of(struct fixture *x, const struct row *w, char *buf, size_t len, char *via,
		     size_t vialen)
{
	struct dframe *d;
	size_t n = row_frames(&x->r, w, 0, false, &d, NULL, NULL, via, vialen), k = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		k += (size_t)snprintf(buf + k, len - k, "%s%s:%u", i ? "|" : "", d[i].function,
				      d[i].line);
		if (d[i].after.hi) {
			char g[96];
			describe_gap(&x->r, &d[i].after, g, sizeof g);
			k += (size_t)snprintf(buf + k, len - k, "(%s)", g);
		}
	}
	free(d);
}

/* The whole frames of a row (folded, JSON, pprof), as "function|...", and its
 * head among them. */
static void whole_of(struct fixture *x, const struct row *w, char *buf, size_t len, size_t *head)
{
	struct dframe *d;
	size_t n = row_frames(&x->r, w, 0, true, &d, NULL, head, NULL, 0), k = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? "|" : "", d[i].function);
		if (d[i].after.hi)
			k += (size_t)snprintf(buf + k, len - k, "(%u-%u left out)", d[i].after.lo,
					      d[i].after.hi);
	}
	free(d);
}

/* Two paths of the interpreter from one line of Python: one row, with their
 * figures summed and the variance of all their samples. */
static void test_python_paths_one_row(void **state)
{
	struct fixture x = { 0 };
	struct row *w;
	char buf[1024], via[96];
	double v;

	(void)state;
	options_init(&x.o);
	report_of(&x, 1, 0, ALL);
	w = row_at(&x, "Hoard.hoard_tuples", 10, 0);
	assert_non_null(w);
	assert_null(row_at(&x, "Hoard.hoard_tuples", 10, 1));
	assert_int_equal(w->f[0].live_bytes, 4000000);
	assert_int_equal(w->f[0].live_blocks, 10300);
	assert_int_equal(w->f[0].live_samples, 12);
	assert_int_equal(w->f[0].alloc_bytes, 4000000);
	v = variance(&stacks[S_TUPLE], 1) + variance(&stacks[S_DICT], 1);
	assert_true(fabs(w->sd - sqrt(v)) <= 1e-6 * sqrt(v));
	/* the sum of the variances, not of the standard errors */
	assert_true(w->sd < sqrt(variance(&stacks[S_TUPLE], 1)) + sqrt(variance(&stacks[S_DICT], 1)));
	assert_false(w->weak);
	/* the head's via is over both paths; the interpreter's frames under
	 * <module> are said where they are left out */
	table_of(&x, w, buf, sizeof buf, via, sizeof via);
	assert_string_equal(via, "via 3-4 frames in libpython3.11.so.1.0");
	assert_string_equal(buf, "Hoard.hoard_tuples:10|main:18|<module>:22"
				 "(2 frames in libpython3.11.so.1.0)|__libc_start_call_main:58");
	/* another line is another row */
	w = row_at(&x, "Hoard.hoard_tuples", 9, 0);
	assert_non_null(w);
	assert_int_equal(w->f[0].live_bytes, 200000);
	assert_null(w->segs);
	fixture_free(&x);
}

/* The same with --all-frames: a row per stack again. */
static void test_all_frames_splits(void **state)
{
	struct fixture x = { 0 };
	struct row *w;

	(void)state;
	options_init(&x.o);
	x.o.all_frames = true;
	report_of(&x, 1, 0, ALL);
	assert_int_equal(x.r.nrows, NSTACKS);
	w = row_at(&x, "_PyObject_Malloc", 0, 0);
	assert_non_null(w);
	for (size_t i = 0; i < x.r.nrows; i++)
		assert_null(x.r.rows[i].segs);
	fixture_free(&x);
}

/* A stack with nothing of the user's (a CPython read natively only): its
 * innermost frame heads it, and the interpreter's frames left out between it
 * and the C library are said, not shown as a call from __libc_start_call_main. */
static void test_impossible_caller_said(void **state)
{
	struct fixture x = { 0 };
	struct row *w;
	char buf[1024], via[96];
	size_t head;

	(void)state;
	options_init(&x.o);
	report_of(&x, 1, 0, 1u << S_NATIVE);
	assert_int_equal(x.r.nrows, 1);
	w = &x.r.rows[0];
	table_of(&x, w, buf, sizeof buf, via, sizeof via);
	assert_string_equal(via, "");
	assert_string_equal(buf, "_PyObject_Malloc:1645(4 frames in libpython3.11.so.1.0)|"
				 "__libc_start_call_main:58");
	/* whole stacks have every frame */
	whole_of(&x, w, buf, sizeof buf, &head);
	assert_string_equal(buf, "_PyObject_Malloc|PyObject_Malloc|PyTuple_New|PyEval_EvalCode|"
				 "Py_BytesMain|__libc_start_call_main");
	assert_int_equal(head, 0);
	fixture_free(&x);
}

/* Whole stacks of a merged row: the frames all its stacks share (not those
 * of the first stack alone); of a row of one stack, all of them. */
static void test_whole_frames_shared(void **state)
{
	struct fixture x = { 0 };
	struct row *w;
	char buf[1024];
	size_t head;

	(void)state;
	options_init(&x.o);
	report_of(&x, 1, 0, ALL);
	w = row_at(&x, "Hoard.hoard_tuples", 10, 0);
	assert_non_null(w->segs);
	whole_of(&x, w, buf, sizeof buf, &head);
	assert_string_equal(buf, "Hoard.hoard_tuples|main|<module>|PyEval_EvalCode|Py_BytesMain|"
				 "__libc_start_call_main");
	assert_int_equal(head, 0);
	w = row_at(&x, "Hoard.hoard_tuples", 9, 0);
	whole_of(&x, w, buf, sizeof buf, &head);
	assert_string_equal(buf, "_PyObject_Malloc|PyObject_Malloc|Hoard.hoard_tuples|main|<module>|"
				 "PyEval_EvalCode|Py_BytesMain|__libc_start_call_main");
	assert_int_equal(head, 2);
	fixture_free(&x);
}

/* C++: one line through std::vector (its frames inlined into the line's
 * address), through operator new, and through a std::function below it: one
 * row; the std:: frames said above the head and below it. */
static void test_cxx_std_frames(void **state)
{
	struct fixture x = { 0 };
	struct row *w;
	char buf[1024], via[96];
	size_t head;

	(void)state;
	options_init(&x.o);
	report_of(&x, 1, 0, ALL);
	w = row_at(&x, "Cache::store(int)", 21, 0);
	assert_non_null(w);
	assert_null(row_at(&x, "Cache::store(int)", 21, 1));
	assert_int_equal(w->f[0].live_bytes, 4096 + 80000 + 8000);
	assert_int_equal(w->f[0].live_blocks, 23);
	table_of(&x, w, buf, sizeof buf, via, sizeof via);
	assert_string_equal(via, "via up to 2 std:: frames");
	assert_string_equal(buf, "Cache::store(int):21(up to 1 std:: frame)|main:30|"
				 "__libc_start_call_main:58");
	/* the std::function frame is not in every stack: left out of the
	 * whole stack, and said there */
	whole_of(&x, w, buf, sizeof buf, &head);
	assert_string_equal(buf, "Cache::store(int)(0-1 left out)|main|__libc_start_call_main");
	assert_int_equal(head, 0);
	fixture_free(&x);

	options_init(&x.o);
	x.o.all_frames = true;
	report_of(&x, 1, 0, ALL);
	assert_non_null(row_at(&x, "Cache::store(int)", 21, 0));
	assert_non_null(row_at(&x, "Cache::store(int)", 21, 1));
	assert_null(row_at(&x, "Cache::store(int)", 21, 2));
	fixture_free(&x);
}

/* Where every stack of a merged row has frames, but not the same, between
 * two that are shown: the whole stack leaves them out and says so, and so do
 * folded stacks (never a call from main to Cache::load as if it were real). */
static void test_differing_hidden_frames(void **state)
{
	struct fixture x = { 0 };
	struct row *w;
	char buf[1024], via[96], *text = NULL;
	size_t head, len = 0;
	FILE *f;

	(void)state;
	options_init(&x.o);
	report_of(&x, 1, 0, ALL);
	w = row_at(&x, "Cache::load(int)", 40, 0);
	assert_non_null(w);
	assert_int_equal(w->f[0].live_bytes, 10000);
	table_of(&x, w, buf, sizeof buf, via, sizeof via);
	assert_string_equal(buf, "Cache::load(int):40(1 std:: frame)|main:30|__libc_start_call_main:58");
	whole_of(&x, w, buf, sizeof buf, &head);
	assert_string_equal(buf, "Cache::load(int)(1-1 left out)|main|__libc_start_call_main");
	x.o.top = 0;
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(report_folded_writer.show(f, &x.r), 0);
	fclose(f);
	assert_non_null(strstr(text, "\n__libc_start_call_main;main;[1 std:: frame];Cache::load(int) 10000\n"));
	/* where some stack has none, nothing is said: a direct call is real */
	assert_non_null(strstr(text, "\n__libc_start_call_main;main;Cache::store(int) 92096\n"));
	/* a row of one stack has all its frames */
	assert_non_null(strstr(text, "\n__libc_start_call_main;Py_BytesMain;PyEval_EvalCode;<module>;main;"
				     "Hoard.hoard_tuples;PyObject_Malloc;_PyObject_Malloc_[i] 200000\n"));
	free(text);
	fixture_free(&x);
}

/* JIT frames are known by their names: a stack through either copy of one
 * compiled function is one row, apart with --all-frames. */
static void test_jit_copies(void **state)
{
	struct fixture x = { 0 };
	struct row *w;
	char buf[1024], via[96];

	(void)state;
	options_init(&x.o);
	report_of(&x, 1, 0, ALL);
	w = row_at(&x, "leak_fn", 10, 0);
	assert_non_null(w);
	assert_null(row_at(&x, "leak_fn", 10, 1));
	assert_int_equal(w->f[0].live_bytes, 1048576 + 2097152);
	table_of(&x, w, buf, sizeof buf, via, sizeof via);
	assert_string_equal(buf, "leak_fn:10|LazyCompile:*handleRequest server.js:42:0|main:30|"
				 "__libc_start_call_main:58");
	fixture_free(&x);

	options_init(&x.o);
	x.o.all_frames = true;
	report_of(&x, 1, 0, ALL);
	assert_non_null(row_at(&x, "leak_fn", 10, 1));
	fixture_free(&x);
}

/* --by line and --by function group by the head as before, and their via is
 * over every stack of the row too. */
static void test_by_line_via(void **state)
{
	struct fixture x = { 0 };
	struct row *w;
	char buf[1024], via[96];

	(void)state;
	options_init(&x.o);
	x.o.by = REPORT_BY_LINE;
	report_of(&x, 1, 0, ALL);
	w = row_at(&x, "Hoard.hoard_tuples", 10, 0);
	assert_non_null(w);
	assert_int_equal(w->f[0].live_bytes, 4000000);
	table_of(&x, w, buf, sizeof buf, via, sizeof via);
	assert_string_equal(via, "via 3-4 frames in libpython3.11.so.1.0");
	fixture_free(&x);

	options_init(&x.o);
	x.o.by = REPORT_BY_FUNCTION;
	report_of(&x, 1, 0, ALL);
	w = row_at(&x, "Hoard.hoard_tuples", 0, 0);
	assert_int_equal(w->f[0].live_bytes, 4200000);
	table_of(&x, w, buf, sizeof buf, via, sizeof via);
	assert_string_equal(via, "via 2-4 frames in libpython3.11.so.1.0");
	fixture_free(&x);
}

/* A diff: the row's growth from both snapshots, its error from the samples of
 * both; a stack new in the second snapshot joins the row of its line. */
static void test_diff_merged(void **state)
{
	struct fixture x = { 0 };
	struct row *w;
	double v;

	(void)state;
	options_init(&x.o);
	report_of(&x, 2, 1u << S_TUPLE, (1u << S_TUPLE) | (1u << S_DICT));
	w = row_at(&x, "Hoard.hoard_tuples", 10, 0);
	assert_non_null(w);
	assert_int_equal(x.r.nrows, 1);
	assert_int_equal(w->f[0].live_bytes, 1000000);
	assert_int_equal(w->f[1].live_bytes, 8000000);
	assert_int_equal(w->growth, 7000000);
	v = variance(&stacks[S_TUPLE], 1) + variance(&stacks[S_TUPLE], 2) +
	    variance(&stacks[S_DICT], 2);
	assert_true(fabs(w->sd - sqrt(v)) <= 1e-6 * sqrt(v));
	fixture_free(&x);
}

/* --focus keeps the stacks through a frame, not the rows: a row that merges
 * stacks holds only those through it. */
static void test_focus_per_stack(void **state)
{
	struct fixture x = { 0 };
	struct row *w;

	(void)state;
	options_init(&x.o);
	assert_int_equal(regcomp(&x.o.focus, "^insertdict$", REG_EXTENDED | REG_NOSUB), 0);
	x.o.has_focus = true;
	report_of(&x, 1, 0, ALL);
	assert_int_equal(x.r.nrows, 1);
	w = row_at(&x, "Hoard.hoard_tuples", 10, 0);
	assert_non_null(w);
	assert_int_equal(w->f[0].live_bytes, 3000000);
	/* the totals are of the whole snapshot still */
	assert_int_equal(x.r.in[0].total.live_bytes, 1000000 + 3000000 + 500000 + 200000 + 4096 +
						     80000 + 8000 + 1048576 + 2097152 + 7000 + 3000);
	fixture_free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_python_paths_one_row),
		cmocka_unit_test(test_all_frames_splits),
		cmocka_unit_test(test_impossible_caller_said),
		cmocka_unit_test(test_whole_frames_shared),
		cmocka_unit_test(test_cxx_std_frames),
		cmocka_unit_test(test_differing_hidden_frames),
		cmocka_unit_test(test_jit_copies),
		cmocka_unit_test(test_by_line_via),
		cmocka_unit_test(test_diff_merged),
		cmocka_unit_test(test_focus_per_stack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
