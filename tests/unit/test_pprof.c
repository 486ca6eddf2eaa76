/* test_pprof.c: unit tests for the pprof encoder: a made-up snapshot with
 * embedded symbols (so nothing is looked up on this machine) is written as a
 * profile, gunzipped and decoded again with libprotobuf-c, and every part that
 * a reader relies on is checked: the mappings with their files and build-ids
 * (the main program first), locations at their addresses with the inlined
 * frames first, functions, the Go heap sample types with inuse_space the
 * default, the period, and a diff's negative values kept as they are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <cmocka.h>

#include "pprof.h"
#include "profile.pb-c.h"
#include "snapshot.h"
#include "symbolize.h"
#include "util.h"

#define BIAS UINT64_C(0x555500000000)
#define LIB_BIAS UINT64_C(0x7f0000000000)

static const uint8_t build_id[20] = {
	0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
	0xcd, 0xef, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
};

/* One embedded symbol: frames given as function, file, line triples. */
static void add_symbol(struct snapshot *s, uint32_t module, uint64_t offset, uint32_t n,
		       const char *const *fn, const char *const *file, const uint32_t *line)
{
	struct snap_symbol *y;
	uint32_t i;

	s->symbols = xrealloc(s->symbols, (s->nsymbols + 1) * sizeof *s->symbols);
	y = &s->symbols[s->nsymbols++];
	y->module = module;
	y->offset = offset;
	y->nframes = n;
	y->frames = xcalloc(n, sizeof *y->frames);
	for (i = 0; i < n; i++) {
		y->frames[i].function = fn[i] ? xstrdup(fn[i]) : NULL;
		y->frames[i].file = file[i] ? xstrdup(file[i]) : NULL;
		y->frames[i].line = line[i];
	}
}

/* A snapshot of a program whose main module comes second in the module table
 * (so that the encoder must find it), with a library without a build-id. */
static struct snapshot *made_up(void)
{
	struct snapshot *s = xcalloc(1, sizeof *s);
	static const char *const fn1[] = { "leaky_helper", "grow_site" };
	static const char *const file1[] = { "/src/leak.c", "/src/leak.c" };
	static const uint32_t line1[] = { 12, 40 };
	static const char *const fn2[] = { "main" }, *const file2[] = { "/src/main.c" };
	static const uint32_t line2[] = { 7 };
	static const char *const fn3[] = { "lib_alloc" }, *const file3[] = { NULL };
	static const uint32_t line3[] = { 0 };

	s->version = SNAPSHOT_VERSION;
	s->pid = 4242;
	s->exe = xstrdup("/opt/app/grower");
	s->cmdline = xstrdup("grower");
	s->time_ns = UINT64_C(1763770000000000000);
	s->capture_start_ns = UINT64_C(1763769990000000000);
	s->sample_rate = 524288;
	s->nmodules = 2;
	s->modules = xcalloc(2, sizeof *s->modules);
	s->modules[0].path = xstrdup("/usr/lib/libgrow.so");
	s->modules[0].bias = LIB_BIAS;
	s->modules[0].lo = LIB_BIAS;
	s->modules[0].hi = LIB_BIAS + 0x8000;
	s->modules[1].path = xstrdup("/opt/app/grower");
	memcpy(s->modules[1].build_id, build_id, sizeof build_id);
	s->modules[1].build_id_len = sizeof build_id;
	s->modules[1].bias = BIAS;
	s->modules[1].lo = BIAS;
	s->modules[1].hi = BIAS + 0x5000;
	add_symbol(s, 1, 0x1234, 2, fn1, file1, line1);
	add_symbol(s, 1, 0x1500, 1, fn2, file2, line2);
	add_symbol(s, 0, 0x300, 1, fn3, file3, line3);
	return s;
}

/* Gunzip and decode what pprof_write wrote. */
static Perftools__Profiles__Profile *decode(const char *gz, size_t len)
{
	z_stream zs;
	size_t cap = 1 << 20;
	uint8_t *out = xmalloc(cap);
	Perftools__Profiles__Profile *p;

	memset(&zs, 0, sizeof zs);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)(uintptr_t)gz;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	p = perftools__profiles__profile__unpack(NULL, zs.total_out, out);
	inflateEnd(&zs);
	free(out);
	assert_non_null(p);
	return p;
}

/* Write samples of s (one snapshot, or a diff of s with itself) and decode. */
static Perftools__Profiles__Profile *profile_of(struct snapshot *s, int nin,
						struct pprof_sample *v, size_t n,
						struct symbolizer **zp, uint32_t **mapp)
{
	struct symbolizer *z = symbolizer_new(NULL, 0);
	uint32_t *map = symbolizer_add(z, s);
	struct pprof_source src = { .nin = nin };
	char *buf = NULL, *cause = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	Perftools__Profiles__Profile *p;
	int k;

	for (k = 0; k < nin; k++) {
		src.path[k] = k ? "b.snap" : "a.snap";
		src.s[k] = s;
		src.map[k] = map;
	}
	for (size_t i = 0; i < n; i++)
		v[i].map = map;
	assert_int_equal(pprof_write(f, z, &src, v, n, &cause), 0);
	assert_int_equal(fclose(f), 0);
	assert_true(len > 18 && (uint8_t)buf[0] == 0x1f && (uint8_t)buf[1] == 0x8b);
	p = decode(buf, len);
	free(buf);
	*zp = z;
	*mapp = map;
	return p;
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < p->n_string_table);
	return p->string_table[i];
}

static const Perftools__Profiles__Location *loc(const Perftools__Profiles__Profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->id == id)
			return p->location[i];
	fail_msg("no location %" PRIu64, id);
	return NULL;
}

static const Perftools__Profiles__Function *func(const Perftools__Profiles__Profile *p,
						 uint64_t id)
{
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->id == id)
			return p->function[i];
	fail_msg("no function %" PRIu64, id);
	return NULL;
}

static void test_show(void **state)
{
	struct snapshot *s = made_up();
	struct snap_frame frames[] = { { 1, 0x1234 }, { 1, 0x1500 } };
	struct snap_frame lib[] = { { 0, 0x300 }, { 1, 0x1500 } };
	struct pprof_sample v[2] = {
		{ frames, 2, NULL, 2, { 10, 40960, 8, 32768 }, "malloc", NULL, 0, NULL },
		{ lib, 2, NULL, 2, { 1, 100, 1, 100 }, "mmap", NULL, 0, NULL },
	};
	struct symbolizer *z;
	uint32_t *map;
	Perftools__Profiles__Profile *p = profile_of(s, 1, v, 2, &z, &map);
	const Perftools__Profiles__Location *l;
	const Perftools__Profiles__Mapping *m;
	char hex[41];

	(void)state;
	assert_string_equal(p->string_table[0], "");
	/* Go's heap profile: four sample types, inuse_space the default */
	assert_int_equal(p->n_sample_type, 4);
	assert_string_equal(str(p, p->sample_type[0]->type), "alloc_objects");
	assert_string_equal(str(p, p->sample_type[0]->unit), "count");
	assert_string_equal(str(p, p->sample_type[1]->type), "alloc_space");
	assert_string_equal(str(p, p->sample_type[2]->type), "inuse_objects");
	assert_string_equal(str(p, p->sample_type[3]->type), "inuse_space");
	assert_string_equal(str(p, p->sample_type[3]->unit), "bytes");
	assert_string_equal(str(p, p->default_sample_type), "inuse_space");
	assert_non_null(p->period_type);
	assert_string_equal(str(p, p->period_type->type), "space");
	assert_string_equal(str(p, p->period_type->unit), "bytes");
	assert_int_equal(p->period, 524288);
	assert_int_equal(p->time_nanos, (int64_t)s->time_ns);
	/* each sample is labelled with its kind of memory */
	assert_int_equal(p->n_sample, 2);
	assert_int_equal(p->sample[0]->n_label, 1);
	assert_string_equal(str(p, p->sample[0]->label[0]->key), "kind");
	assert_string_equal(str(p, p->sample[0]->label[0]->str), "malloc");
	assert_int_equal(p->sample[1]->n_label, 1);
	assert_string_equal(str(p, p->sample[1]->label[0]->str), "mmap");
	assert_int_equal(p->duration_nanos, 10000000000);

	/* mapping[0] is the main program, with its build-id in hex */
	assert_int_equal(p->n_mapping, 2);
	m = p->mapping[0];
	assert_int_equal(m->id, 1);
	assert_string_equal(str(p, m->filename), "/opt/app/grower");
	assert_string_equal(str(p, m->build_id), sym_hex(hex, build_id, sizeof build_id));
	assert_string_equal(str(p, m->build_id), "deadbeef0123456789abcdef0011223344556677");
	assert_int_equal(m->memory_start, BIAS);
	assert_int_equal(m->memory_limit, BIAS + 0x5000);
	assert_true(m->has_functions && m->has_filenames && m->has_line_numbers &&
		    m->has_inline_frames);
	m = p->mapping[1];
	assert_string_equal(str(p, m->filename), "/usr/lib/libgrow.so");
	assert_int_equal(m->build_id, 0);   /* none: "" */

	/* the samples: leaf first, values as given */
	assert_int_equal(p->n_sample, 2);
	assert_int_equal(p->sample[0]->n_value, 4);
	assert_int_equal(p->sample[0]->value[0], 10);
	assert_int_equal(p->sample[0]->value[1], 40960);
	assert_int_equal(p->sample[0]->value[2], 8);
	assert_int_equal(p->sample[0]->value[3], 32768);
	assert_int_equal(p->sample[0]->n_location_id, 2);
	/* the leaf: an inlined frame first, then the function holding it */
	l = loc(p, p->sample[0]->location_id[0]);
	assert_int_equal(l->mapping_id, 1);
	assert_int_equal(l->address, BIAS + 0x1234);
	assert_int_equal(l->n_line, 2);
	assert_string_equal(str(p, func(p, l->line[0]->function_id)->name), "leaky_helper");
	assert_string_equal(str(p, func(p, l->line[0]->function_id)->filename), "/src/leak.c");
	assert_int_equal(l->line[0]->line, 12);
	assert_string_equal(str(p, func(p, l->line[1]->function_id)->name), "grow_site");
	assert_int_equal(l->line[1]->line, 40);
	/* main is one location shared by both samples */
	assert_int_equal(p->sample[0]->location_id[1], p->sample[1]->location_id[1]);
	assert_int_equal(p->n_location, 3);
	l = loc(p, p->sample[1]->location_id[0]);
	assert_int_equal(l->mapping_id, 2);
	assert_int_equal(l->address, LIB_BIAS + 0x300);
	assert_string_equal(str(p, func(p, l->line[0]->function_id)->name), "lib_alloc");
	assert_int_equal(func(p, l->line[0]->function_id)->filename, 0);

	perftools__profiles__profile__free_unpacked(p, NULL);
	free(map);
	symbolizer_free(z);
	snapshot_free(s);
}

static void test_diff_negative(void **state)
{
	struct snapshot *s = made_up();
	struct snap_frame frames[] = { { 1, 0x1234 }, { 1, 0x1500 } };
	struct snap_frame lost[] = { { SNAP_NO_MODULE, 0xdead }, { 1, 0x1500 } };
	struct pprof_sample v[2] = {
		{ frames, 2, NULL, 2, { 20, 81920, 20, 81920 }, NULL, NULL, 0, NULL },
		{ lost, 2, NULL, 2, { -2, -1024, -2, -1024 }, NULL, NULL, 0, NULL },
	};
	struct symbolizer *z;
	uint32_t *map;
	Perftools__Profiles__Profile *p = profile_of(s, 2, v, 2, &z, &map);
	const Perftools__Profiles__Location *l;

	(void)state;
	assert_int_equal(p->n_sample, 2);
	assert_int_equal(p->sample[0]->value[3], 81920);
	assert_int_equal(p->sample[1]->value[0], -2);
	assert_int_equal(p->sample[1]->value[1], -1024);
	assert_int_equal(p->sample[1]->value[3], -1024);
	/* a frame outside every module: no mapping, the address itself, no lines */
	l = loc(p, p->sample[1]->location_id[0]);
	assert_int_equal(l->mapping_id, 0);
	assert_int_equal(l->address, 0xdead);
	assert_int_equal(l->n_line, 0);
	/* the same snapshot twice: no time between them */
	assert_int_equal(p->duration_nanos, 0);
	/* only the main program's mapping is used, and it comes first */
	assert_int_equal(p->n_mapping, 1);
	assert_string_equal(str(p, p->mapping[0]->build_id),
			    "deadbeef0123456789abcdef0011223344556677");
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(map);
	symbolizer_free(z);
	snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_show),
		cmocka_unit_test(test_diff_negative),
	};
	unsetenv("DEBUGINFOD_URLS");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
