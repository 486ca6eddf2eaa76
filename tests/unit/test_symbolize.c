/* test_symbolize.c: the symbolizer on this very program (its own DWARF):
 * two functions are named with their file and line, and after
 * symbolizer_drop_debug (the debug information let go once a report has
 * looked up every frame) a frame looked up before keeps its location, and a
 * new one is resolved as well as by a fresh symbolizer. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "snapshot.h"
#include "symbolize.h"
#include "util.h"

/* Two functions of known lines, kept out of line. */
int marker_one(int x);
int marker_two(int x);
__attribute__((noinline)) int marker_one(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int marker_two(int x)
{
	return x * 5 + 2;
}

/* This program as a snapshot's one module (no build-id: by path and size). */
static int own_module(struct dl_phdr_info *info, size_t size, void *data)
{
	struct snap_module *m = data;
	(void)size;
	/* the first object is the program itself */
	m->bias = info->dlpi_addr;
	m->lo = UINT64_MAX;
	m->hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + p->p_vaddr < m->lo)
			m->lo = info->dlpi_addr + p->p_vaddr;
		if (info->dlpi_addr + p->p_vaddr + p->p_memsz > m->hi)
			m->hi = info->dlpi_addr + p->p_vaddr + p->p_memsz;
	}
	return 1;
}

static struct snapshot *self_snapshot(void)
{
	struct snapshot *s = xcalloc(1, sizeof *s);
	char path[PATH_MAX];

	s->version = SNAPSHOT_VERSION;
	s->nmodules = 1;
	s->modules = xcalloc(1, sizeof *s->modules);
	assert_non_null(realpath("/proc/self/exe", path));
	s->modules[0].path = xstrdup(path);
	dl_iterate_phdr(own_module, &s->modules[0]);
	assert_true(s->modules[0].hi > s->modules[0].lo);
	return s;
}

/* The offset a return address into f would have (the lookup takes the byte
 * before it: f's first). */
static uint64_t offset_of(const struct snapshot *s, int (*f)(int))
{
	return (uint64_t)(uintptr_t)f - s->modules[0].bias + 1;
}

/* The innermost frame names fn, in this file. */
static void expect_named(const struct sym_loc *l, const char *fn)
{
	assert_true(l->nframes >= 1);
	assert_non_null(l->frames[0].function);
	assert_string_equal(l->frames[0].function, fn);
	assert_non_null(l->frames[0].file);
	assert_non_null(strstr(l->frames[0].file, "test_symbolize.c"));
	assert_true(l->frames[0].line > 0);
}

static void test_drop_debug(void **state)
{
	(void)state;
	struct snapshot *s = self_snapshot();
	struct symbolizer *z = symbolizer_new(NULL, 0), *fresh = symbolizer_new(NULL, 0);
	uint32_t *map = symbolizer_add(z, s), *fmap = symbolizer_add(fresh, s);
	uint64_t one = offset_of(s, marker_one), two = offset_of(s, marker_two);
	const struct sym_loc *l;
	uint32_t line_one, index_one;

	l = symbolizer_lookup(z, map[0], one);
	expect_named(l, "marker_one");
	line_one = l->frames[0].line;
	index_one = symbolizer_loc_index(z, l);

	symbolizer_drop_debug(z);
	symbolizer_drop_debug(z);        /* twice: nothing to let go */

	/* a frame not looked up before: read again, as a fresh symbolizer does */
	l = symbolizer_lookup(z, map[0], two);
	expect_named(l, "marker_two");
	const struct sym_loc *f = symbolizer_lookup(fresh, fmap[0], two);
	expect_named(f, "marker_two");
	assert_int_equal(l->frames[0].line, f->frames[0].line);
	assert_int_equal(l->nframes, f->nframes);

	/* one looked up before: its location kept, not made again */
	l = symbolizer_lookup(z, map[0], one);
	expect_named(l, "marker_one");
	assert_int_equal(l->frames[0].line, line_one);
	assert_int_equal(symbolizer_loc_index(z, l), index_one);
	assert_int_equal(symbolizer_nlocs(z), 2);

	free(map);
	free(fmap);
	symbolizer_free(z);
	symbolizer_free(fresh);
	snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop_debug),
	};
	/* (keep the markers called, so that they are compiled as written) */
	if (marker_one(1) + marker_two(1) != 11)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
