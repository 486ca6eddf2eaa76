/* test_flame.c: unit tests for the flame graph (src/flame.c): what a box
 * says of where its frames are must not depend on the order in which the
 * stacks were added, since the writers take rows in whatever order is
 * quickest to read. And a box counts every stack through it, whichever
 * frames the stack shares with the one added before it. */
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

/* Stacks of labels (a string, a character a frame, outermost first) added
 * to a diff graph in turn, each growing by its bytes; its SVG. */
static char *draw_diff(const char *const *stacks, const int64_t *bytes, size_t n)
{
	struct flame *fl = flame_new(true);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	for (size_t i = 0; i < n; i++) {
		struct flame_frame fr[8];
		char labels[8][2];
		size_t k;
		for (k = 0; stacks[i][k]; k++) {
			labels[k][0] = stacks[i][k];
			labels[k][1] = '\0';
			fr[k] = (struct flame_frame){ .label = labels[k], .file = "p.c", .line = 1,
						      .module = "p" };
		}
		flame_add(fl, fr, k, bytes[i] < 0 ? (uint64_t)-bytes[i] : 0,
			  bytes[i] > 0 ? (uint64_t)bytes[i] : 0, 0, 0);
	}
	flame_write(fl, f, "test", "test", false);
	fclose(f);
	flame_free(fl);
	return buf;
}

/* The tooltip of the box labelled label whose line ends in figures. */
static void assert_box(const char *svg, const char *label, const char *figures)
{
	char want[128];
	snprintf(want, sizeof want, "<title>%s\np.c:1 in p\n%s\n", label, figures);
	if (!strstr(svg, want))
		fail_msg("no box \"%s\" with \"%s\" in:\n%s", label, figures, svg);
}

static void test_counts_through_frames(void **state)
{
	/* m-f-g, then m-f ending where the last went on, then m-h-g: g
	 * again but under another parent, then back under f */
	static const char *const stacks[] = { "mfg", "mf", "mhg", "mfg", "mfx" };
	static const int64_t bytes[] = { 4096, -1024, 2048, 1024, 512 };
	char *svg = draw_diff(stacks, bytes, 5);
	(void)state;

	assert_box(svg, "m", "+6.50 KiB (grew 7.50 KiB, shrank 1.00 KiB); blocks +0");
	assert_box(svg, "f", "+4.50 KiB (grew 5.50 KiB, shrank 1.00 KiB); blocks +0");
	assert_box(svg, "g", "+5.00 KiB (grew 5.00 KiB, shrank 0 B); blocks +0");
	assert_box(svg, "h", "+2.00 KiB (grew 2.00 KiB, shrank 0 B); blocks +0");
	assert_box(svg, "g", "+2.00 KiB (grew 2.00 KiB, shrank 0 B); blocks +0");
	assert_box(svg, "x", "+512 B (grew 512 B, shrank 0 B); blocks +0");
	free(svg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_independent),
		cmocka_unit_test(test_counts_through_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
