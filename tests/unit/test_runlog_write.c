/* test_runlog_write.c: unit tests for the run.log writer: the exact text of the
 * metadata, column header, sample and event lines; refusing an existing file
 * unless forced; a failed write kept as the log's error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "runlog.h"
#include "util.h"

/* A fresh path in a private directory. */
static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/test_runlog_write.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The whole file, caller frees. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The lines of text from the n-th on (0-based). */
static const char *from_line(const char *text, int n)
{
	while (n-- > 0) {
		text = strchr(text, '\n');
		assert_non_null(text);
		text++;
	}
	return text;
}

static void test_format(void **state)
{
	char path[128], *cause = NULL, *text;
	struct runlog *log;
	struct mem_sample s = { .pid = 1234, .rss = 10240, .anon = 8192, .file = 2048,
				.shmem = 0, .swap = 4, .vsz = 65536,
				.pss = RUNLOG_NONE, .uss = RUNLOG_NONE, .hwm = 20480,
				.cg_usage = 51200, .cg_limit = RUNLOG_NONE };
	struct mem_sample tot = s;
	(void)state;

	snprintf(path, sizeof path, "%s/run.log", dir);
	log = runlog_create(path, false, "memwatch -p 1234", 1000, false, &cause);
	assert_non_null(log);
	assert_string_equal(runlog_path(log), path);
	runlog_meta(log, "process", "%d %s", 1234, "./server --two\nlines");
	runlog_event(log, 0, 0, "start", NULL);
	runlog_sample(log, 0, &s);
	tot.pid = 0;
	tot.pss = 77;
	tot.uss = 66;
	tot.hwm = tot.cg_usage = tot.cg_limit = RUNLOG_NONE;
	runlog_sample(log, 1.0004, &tot);
	runlog_event(log, 5.0019, 1234, "trigger", "rss=%d rule=%s", 75000, "+64MiB");
	runlog_event(log, 9, 0, "end", "reason=%s", "exited");
	assert_int_equal(runlog_error(log), 0);
	assert_true(runlog_elapsed(log) >= 0);
	assert_int_equal(runlog_close(log, &cause), 0);

	text = slurp(path);
	/* line 3 is the start time, which changes */
	assert_true(strncmp(text, "# memwatch run.log 2\n# command: memwatch -p 1234\n# start: ", 58) == 0);
	assert_string_equal(from_line(text, 3),
		"# interval_ms: 1000\n"
		"# process: 1234 ./server --two lines\n"
		"# pss: no\n"
		"time_s pid rss_kib anon_kib file_kib shmem_kib swap_kib vsz_kib pss_kib uss_kib "
		"hwm_kib cgroup_kib cgroup_limit_kib\n"
		"# event 0.000 - start\n"
		"0.000 1234 10240 8192 2048 0 4 65536 - - 20480 51200 -\n"
		"1.000 total 10240 8192 2048 0 4 65536 77 66 - - -\n"
		"# event 5.002 1234 trigger rss=75000 rule=+64MiB\n"
		"# event 9.000 - end reason=exited\n");
	free(text);
}

static void test_existing(void **state)
{
	char path[128], *cause = NULL, *text;
	struct runlog *log;
	FILE *f;
	(void)state;

	snprintf(path, sizeof path, "%s/old.log", dir);
	f = fopen(path, "w");
	fputs("precious\n", f);
	fclose(f);
	log = runlog_create(path, false, "memwatch", 1000, true, &cause);
	assert_null(log);
	assert_non_null(cause);
	assert_non_null(strstr(cause, "exists (use --force to overwrite)"));
	free(cause);
	cause = NULL;
	text = slurp(path);
	assert_string_equal(text, "precious\n");
	free(text);

	/* forced: replaced, and nothing of the old file remains */
	log = runlog_create(path, true, "memwatch", 1000, true, &cause);
	assert_non_null(log);
	assert_int_equal(runlog_close(log, &cause), 0);
	text = slurp(path);
	assert_null(strstr(text, "precious"));
	assert_non_null(strstr(text, "# pss: yes\ntime_s pid"));
	free(text);
}

static void test_unwritable(void **state)
{
	char path[128], *cause = NULL;
	struct runlog *log;
	struct mem_sample s = { .pid = 1, .pss = RUNLOG_NONE, .uss = RUNLOG_NONE };
	(void)state;

	snprintf(path, sizeof path, "%s/no/such/dir.log", dir);
	assert_null(runlog_create(path, false, "memwatch", 1000, false, &cause));
	assert_non_null(strstr(cause, "cannot create"));
	free(cause);
	cause = NULL;

	/* a full disk: the first failed write is kept and reported at close */
	if (access("/dev/full", W_OK) != 0)
		skip();
	log = runlog_create("/dev/full", true, "memwatch", 1000, false, &cause);
	if (log == NULL) {
		/* the header itself did not fit */
		assert_non_null(strstr(cause, "No space left on device"));
		free(cause);
		return;
	}
	runlog_sample(log, 0, &s);
	assert_int_not_equal(runlog_error(log), 0);
	assert_int_equal(runlog_close(log, &cause), -1);
	assert_non_null(strstr(cause, "No space left on device"));
	free(cause);
}

/* Every byte but NUL goes into an event value and comes back out of it: the
 * value holds no space, and '%' itself is escaped. */
static void test_encode_roundtrip(void **state)
{
	char in[256], *enc, *detail, *out;
	(void)state;
	for (int i = 1; i < 256; i++)
		in[i - 1] = (char)i;
	in[255] = '\0';
	enc = runlog_encode(in);
	assert_null(strchr(enc, ' '));
	assert_null(strchr(enc, '\n'));
	detail = xasprintf("before=1 path=%s after=%%41", enc);
	out = runlog_field(detail, "path");
	assert_string_equal(out, in);
	free(out);
	/* a value written raw is read as it is, '%' that is no escape included */
	out = runlog_field(detail, "after");
	assert_string_equal(out, "A");
	free(out);
	assert_null(runlog_field(detail, "missing"));
	out = runlog_field("path=my%20run%20%2599.1.snap live=3", "path");
	assert_string_equal(out, "my run %99.1.snap");
	free(out);
	out = runlog_field("cause=50%", "cause");
	assert_string_equal(out, "50%");
	free(out);
	free(detail);
	free(enc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_existing),
		cmocka_unit_test(test_unwritable),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
