/* test_flame.c: unit tests for the flame graph (src/flame.c): what a box
 * says of where its frames are must not depend on the order in which the
 * stacks were added, since the writers take rows in whatever order is
 * quickest to read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "flame.h"

/* frames outermost first: main in prog.c, then a label in module mod */
static void add(struct flame *fl, const char *label, const char *file, uint32_t line,
		const char *mod, uint64_t bytes)
{
	struct flame_frame fr[2] = {
		{ .label = "main", .file = "prog.c", .line = 3, .module = "prog" },
		{ .label = label, .file = file, .line = line, .module = mod },
	};
	flame_add(fl, fr, 2, 0, bytes, 0, 1);
}

/* The SVG of stacks added in the order given (reverse: last to first). */
static char *draw(bool reverse)
{
	struct flame *fl = flame_new(false);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	static const struct {
		const char *label, *file;
		uint32_t line;
		const char *mod;
		uint64_t bytes;
	} st[] = {
		{ "memcpy", NULL, 0, "libc.so.6", 4096 },
		{ "memcpy", NULL, 0, "ld-linux-x86-64.so.2", 8192 },
		{ "parse", "parse.c", 10, "prog", 4096 },
		{ "parse", "parse.c", 12, "prog", 8192 },
		{ "strdup", NULL, 0, "libc.so.6", 4096 },
		{ "strdup", NULL, 0, "libc.so.6", 8192 },
	};
	size_t n = sizeof st / sizeof st[0];

	assert_non_null(f);
	for (size_t i = 0; i < n; i++) {
		size_t k = reverse ? n - 1 - i : i;
		add(fl, st[k].label, st[k].file, st[k].line, st[k].mod, st[k].bytes);
	}
	flame_write(fl, f, "test", "test", false);
	fclose(f);
	flame_free(fl);
	return buf;
}

static void test_order_independent(void **state)
{
	char *a = draw(false), *b = draw(true);
	(void)state;

	assert_string_equal(a, b);
	/* one label in two modules: neither module is named */
	assert_non_null(strstr(a, "no source line in several modules"));
	assert_null(strstr(a, "no source line in ld-linux"));
	/* two lines of one file and module: the module still is */
	assert_non_null(strstr(a, "several places in prog"));
	/* one module throughout */
	assert_non_null(strstr(a, "no source line in libc.so.6"));
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_independent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
