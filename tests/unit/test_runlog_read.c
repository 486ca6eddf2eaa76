/* test_runlog_read.c: unit tests for the run.log reader: what it takes, what it
 * refuses and the exact words and line numbers of its complaints. */
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

#define HEAD "# memwatch run.log 1\n" \
	"# command: memwatch -p 1234 -i 1s\n" \
	"# start: 2026-11-22T10:00:00Z 1763805600.123\n" \
	"# interval_ms: 1000\n" \
	"# process: 1234 /usr/bin/foo --flag\n" \
	"# pss: no\n" \
	"time_s pid rss_kib anon_kib file_kib shmem_kib swap_kib vsz_kib pss_kib uss_kib\n"

/* Write text (len bytes) to a fresh temporary file; caller frees and unlinks. */
static char *write_tmp(const char *text, size_t len)
{
	char *path = xstrdup("/tmp/test_runlog_read.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write_all(fd, text, len), 0);
	close(fd);
	return path;
}

/* Read text as a run.log; returns the data or NULL with *cause, which has the
 * temporary file's name replaced by "F" so that tests can compare it whole. */
static struct runlog_data *read_text_n(const char *text, size_t len, char **cause)
{
	char *path = write_tmp(text, len);
	struct runlog_data *d;

	*cause = NULL;
	d = runlog_read(path, cause);
	if (*cause) {
		char *p = strstr(*cause, path);
		if (p) {
			char *r = xasprintf("%.*sF%s", (int)(p - *cause), *cause, p + strlen(path));
			free(*cause);
			*cause = r;
		}
	}
	unlink(path);
	free(path);
	return d;
}

static struct runlog_data *read_text(const char *text, char **cause)
{
	return read_text_n(text, strlen(text), cause);
}

/* Expect text to be refused with exactly the message want. */
static void expect_error(const char *text, const char *want)
{
	char *cause;
	struct runlog_data *d = read_text(text, &cause);
	assert_null(d);
	assert_non_null(cause);
	assert_string_equal(cause, want);
	free(cause);
}

static void test_valid(void **state)
{
	char *cause;
	struct runlog_data *d;
	(void)state;

	d = read_text(HEAD
		      "# event 0.000 1234 start\n"
		      "0.000 1234 10240 8192 2048 0 0 65536 - -\n"
		      "0.000 1235 100 50 50 0 0 200 - -\n"
		      "0.000 total 10340 - - - - - - -\n"
		      "\n"
		      "1.500 1234 10300 8252 2048 0 7 65536 9000 8000\n"
		      "# event 5.002 1234 trigger rss=75000 baseline=10240 rule=+64MiB\n"
		      "# event 9.000 - end reason=exited   \n"
		      "# something a later writer added\n"
		      "2.000 1235 120 70 50 0 0 200 - -\n", &cause);
	assert_null(cause);
	assert_non_null(d);
	assert_string_equal(d->command, "memwatch -p 1234 -i 1s");
	assert_true(d->has_pss);        /* one sample has a PSS figure */
	assert_int_equal(d->nsamples, 5);
	assert_true(d->samples[0].t == 0.0);
	assert_int_equal(d->samples[0].s.pid, 1234);
	assert_int_equal(d->samples[0].s.rss, 10240);
	assert_int_equal(d->samples[0].s.anon, 8192);
	assert_int_equal(d->samples[0].s.file, 2048);
	assert_int_equal(d->samples[0].s.vsz, 65536);
	assert_true(d->samples[0].s.pss == RUNLOG_NONE);
	assert_true(d->samples[0].s.uss == RUNLOG_NONE);
	assert_int_equal(d->samples[2].s.pid, 0);
	assert_true(d->samples[2].s.anon == RUNLOG_NONE);
	assert_true(d->samples[3].t == 1.5);
	assert_int_equal(d->samples[3].s.swap, 7);
	assert_int_equal(d->samples[3].s.pss, 9000);
	assert_int_equal(d->samples[3].s.uss, 8000);
	assert_int_equal(d->npids, 3);
	assert_int_equal(d->pids[0], 1234);
	assert_int_equal(d->pids[1], 1235);
	assert_int_equal(d->pids[2], 0);
	assert_int_equal(d->nevents, 3);
	assert_string_equal(d->events[0].kind, "start");
	assert_string_equal(d->events[0].detail, "");
	assert_int_equal(d->events[1].pid, 1234);
	assert_true(d->events[1].t == 5.002);
	assert_string_equal(d->events[1].kind, "trigger");
	assert_string_equal(d->events[1].detail, "rss=75000 baseline=10240 rule=+64MiB");
	assert_int_equal(d->events[2].pid, 0);
	assert_string_equal(d->events[2].detail, "reason=exited");
	assert_int_equal(d->nprocs, 1);
	assert_int_equal(d->procs[0].pid, 1234);
	assert_string_equal(d->procs[0].cmd, "/usr/bin/foo --flag");
	runlog_data_free(d);
}

/* The events of a process that was stopped, and of the snapshots it put off,
 * are read like any other. */
static void test_stopped_events(void **state)
{
	char *cause;
	struct runlog_data *d;
	(void)state;

	d = read_text(HEAD
		      "0.000 1234 10240 8192 2048 0 0 65536 - -\n"
		      "# event 2.250 1234 stopped state=stopped\n"
		      "# event 3.000 1234 snapshot-deferred state=stopped\n"
		      "3.000 1234 10240 8192 2048 0 0 65536 - -\n"
		      "# event 14.250 1234 continued after_s=12.0\n"
		      "# event 14.251 1234 snapshot path=run.2.snap live=7895803 stacks=2 delayed_s=11.3\n"
		      "# event 15.100 1234 snapshot-failed cause=no_answer retry=yes\n"
		      "# event 16.000 1234 snapshot-failed cause=stopped final=1 retry=no\n"
		      "16.000 1234 10300 8252 2048 0 0 65536 - -\n", &cause);
	assert_null(cause);
	assert_non_null(d);
	assert_int_equal(d->nsamples, 3);
	assert_int_equal(d->nevents, 6);
	assert_string_equal(d->events[0].kind, "stopped");
	assert_string_equal(d->events[0].detail, "state=stopped");
	assert_string_equal(d->events[1].kind, "snapshot-deferred");
	assert_string_equal(d->events[2].kind, "continued");
	assert_true(d->events[2].t == 14.25);
	assert_string_equal(d->events[2].detail, "after_s=12.0");
	assert_string_equal(d->events[3].detail, "path=run.2.snap live=7895803 stacks=2 delayed_s=11.3");
	assert_string_equal(d->events[5].detail, "cause=stopped final=1 retry=no");
	runlog_data_free(d);
}

/* A killed memwatch leaves a last line without its newline: it is dropped. */
static void test_cut_last_line(void **state)
{
	char *cause;
	struct runlog_data *d;
	(void)state;

	d = read_text(HEAD "0.000 1234 10240 8192 2048 0 0 65536 - -\n1.000 1234 10", &cause);
	assert_null(cause);
	assert_non_null(d);
	assert_int_equal(d->nsamples, 1);
	runlog_data_free(d);
	/* even a cut event line that would be malformed whole */
	d = read_text(HEAD "0.000 1234 10240 8192 2048 0 0 65536 - -\n# event 1.0", &cause);
	assert_null(cause);
	assert_int_equal(d->nsamples, 1);
	assert_int_equal(d->nevents, 0);
	runlog_data_free(d);
	/* a complete last line without its newline is dropped all the same */
	d = read_text(HEAD "0.000 1234 10240 8192 2048 0 0 65536 - -\n"
		      "1.000 1234 10240 8192 2048 0 0 65536 - -", &cause);
	assert_null(cause);
	assert_int_equal(d->nsamples, 1);
	runlog_data_free(d);
	/* cut in the column header: no samples */
	expect_error("# memwatch run.log 1\n# pss: no\ntime_s pid rss", "'F' holds no samples");
}

/* Version 2: three more columns, VmHWM and the memory cgroup's usage and
 * limit; a version 1 line in it is refused, and the other way round. */
static void test_version2(void **state)
{
	static const char head2[] = "# memwatch run.log 2\n# pss: no\n"
		"time_s pid rss_kib anon_kib file_kib shmem_kib swap_kib vsz_kib pss_kib uss_kib "
		"hwm_kib cgroup_kib cgroup_limit_kib\n";
	char *cause = NULL, text[1024];
	struct runlog_data *d;
	(void)state;

	snprintf(text, sizeof text, "%s0.000 1234 10240 8192 2048 0 0 65536 - - 20480 51200 163840\n"
		 "0.000 total 10240 8192 2048 0 0 65536 - - - - -\n", head2);
	d = read_text(text, &cause);
	assert_null(cause);
	assert_non_null(d);
	assert_int_equal(d->nsamples, 2);
	assert_int_equal(d->samples[0].s.hwm, 20480);
	assert_int_equal(d->samples[0].s.cg_usage, 51200);
	assert_int_equal(d->samples[0].s.cg_limit, 163840);
	assert_true(d->samples[1].s.hwm == RUNLOG_NONE);
	assert_true(d->samples[1].s.cg_limit == RUNLOG_NONE);
	runlog_data_free(d);
	/* a version 1 log read by this reader: the new figures are unknown */
	d = read_text(HEAD "0.000 1234 10240 8192 2048 0 0 65536 - -\n", &cause);
	assert_non_null(d);
	assert_true(d->samples[0].s.hwm == RUNLOG_NONE && d->samples[0].s.cg_usage == RUNLOG_NONE &&
		    d->samples[0].s.cg_limit == RUNLOG_NONE);
	runlog_data_free(d);
	snprintf(text, sizeof text, "%s0.000 1234 10240 8192 2048 0 0 65536 - -\n", head2);
	expect_error(text, "'F' line 4: expected 13 columns, found 10");
	snprintf(text, sizeof text, "%s0.000 1234 1 1 1 1 1 1 - - 1 x 1\n", head2);
	expect_error(text, "'F' line 4: invalid cgroup_kib 'x'");
	expect_error("# memwatch run.log 2\ntime_s pid rss_kib anon_kib file_kib shmem_kib swap_kib vsz_kib "
		     "pss_kib uss_kib\n",
		     "'F' line 2: expected the column header 'time_s pid rss_kib anon_kib file_kib shmem_kib "
		     "swap_kib vsz_kib pss_kib uss_kib hwm_kib cgroup_kib cgroup_limit_kib'");
}

static void test_not_runlog(void **state)
{
	(void)state;
	expect_error("", "'F' is empty, not a memwatch run.log");
	expect_error("time,rss\n0,100\n", "'F' is not a memwatch run.log");
	expect_error("# memwatch run.log\n", "'F' is not a memwatch run.log");
	expect_error("# memwatch run.log 1x\n", "'F' is not a memwatch run.log");
	expect_error("# memwatch run.log 3\n", "'F' is a run.log of version 3; this memwatch reads versions 1 and 2");
	expect_error("# memwatch run.log 0\n", "'F' is a run.log of version 0; this memwatch reads versions 1 and 2");
	expect_error("# memwatch run", "'F' is not a memwatch run.log");
	expect_error("\x89PNG\r\n\x1a\n", "'F' is not a memwatch run.log");
	expect_error("# memwatch run.log 1\n", "'F' holds no samples");
	expect_error(HEAD, "'F' holds no samples");
	expect_error(HEAD "# event 1.000 - end\n", "'F' holds no samples");
}

static void test_bad_lines(void **state)
{
	(void)state;
	expect_error(HEAD "0.000 1234 10240 8192 2048 0 0 65536 - -\n0.500 1234 3\n",
		     "'F' line 9: expected 10 columns, found 3");
	expect_error(HEAD "0.000 1234 10240 8192 2048 0 0 65536 - - 7\n",
		     "'F' line 8: expected 10 columns, found 11");
	expect_error(HEAD "0.000 1234 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20\n",
		     "'F' line 8: expected 10 columns, found 22");
	expect_error("# memwatch run.log 1\ntime_s pid rss_kib\n",
		     "'F' line 2: expected the column header 'time_s pid rss_kib anon_kib file_kib "
		     "shmem_kib swap_kib vsz_kib pss_kib uss_kib'");
	expect_error("# memwatch run.log 1\n0.000 1234 10240 8192 2048 0 0 65536 - -\n",
		     "'F' line 2: expected the column header 'time_s pid rss_kib anon_kib file_kib "
		     "shmem_kib swap_kib vsz_kib pss_kib uss_kib'");
	expect_error(HEAD "abc 1234 10240 8192 2048 0 0 65536 - -\n", "'F' line 8: invalid time_s 'abc'");
	expect_error(HEAD "-1 1234 10240 8192 2048 0 0 65536 - -\n", "'F' line 8: invalid time_s '-1'");
	expect_error(HEAD "nan 1234 10240 8192 2048 0 0 65536 - -\n", "'F' line 8: invalid time_s 'nan'");
	expect_error(HEAD "1e999 1234 10240 8192 2048 0 0 65536 - -\n", "'F' line 8: invalid time_s '1e999'");
	expect_error(HEAD "0.0s 1234 10240 8192 2048 0 0 65536 - -\n", "'F' line 8: invalid time_s '0.0s'");
	expect_error(HEAD "0 0 10240 8192 2048 0 0 65536 - -\n", "'F' line 8: invalid pid '0'");
	expect_error(HEAD "0 totals 10240 8192 2048 0 0 65536 - -\n", "'F' line 8: invalid pid 'totals'");
	expect_error(HEAD "0 2147483648 10240 8192 2048 0 0 65536 - -\n",
		     "'F' line 8: invalid pid '2147483648'");
	expect_error(HEAD "0 -5 10240 8192 2048 0 0 65536 - -\n", "'F' line 8: invalid pid '-5'");
	expect_error(HEAD "0 1 10240x 8192 2048 0 0 65536 - -\n", "'F' line 8: invalid rss_kib '10240x'");
	expect_error(HEAD "0 1 1 -8192 2048 0 0 65536 - -\n", "'F' line 8: invalid anon_kib '-8192'");
	expect_error(HEAD "0 1 1 1 1 1 1 1 1 --\n", "'F' line 8: invalid uss_kib '--'");
	/* UINT64_MAX is what "-" reads as, so it cannot be a figure */
	expect_error(HEAD "0 1 1 1 1 1 18446744073709551615 1 1 1\n",
		     "'F' line 8: invalid swap_kib '18446744073709551615'");
	expect_error(HEAD "0 1 1 1 1 1 1 99999999999999999999 1 1\n",
		     "'F' line 8: invalid vsz_kib '99999999999999999999'");
	expect_error(HEAD "# event\n", "'F' line 8: malformed event (expected '# event TIME PID KIND [DETAIL]')");
	expect_error(HEAD "# event 1.0 -\n", "'F' line 8: malformed event (expected '# event TIME PID KIND [DETAIL]')");
	expect_error(HEAD "# event x - end\n", "'F' line 8: invalid event time 'x'");
	expect_error(HEAD "# event 1.0 total end\n", "'F' line 8: invalid event pid 'total'");
	expect_error("# memwatch run.log 1\n# process: x /bin/sh\n", "'F' line 2: invalid process pid 'x'");
}

static void test_largest_figures(void **state)
{
	char *cause;
	struct runlog_data *d;
	(void)state;

	d = read_text(HEAD "0 2147483647 18446744073709551614 0 0 0 0 0 0 0\n", &cause);
	assert_non_null(d);
	assert_int_equal(d->samples[0].s.pid, 2147483647);
	assert_true(d->samples[0].s.rss == UINT64_MAX - 1);
	assert_int_equal(d->npids, 1);
	runlog_data_free(d);
}

static void test_nul_byte(void **state)
{
	static const char text[] = HEAD "0 1 1 1 1 1 1 1 1 1\n0 1 1 1\0 1 1 1 1 1 1\n";
	char *cause;
	struct runlog_data *d;
	(void)state;

	d = read_text_n(text, sizeof text - 1, &cause);
	assert_null(d);
	assert_string_equal(cause, "'F' line 9: holds a NUL byte (binary data?)");
	free(cause);
}

/* Many processes: every pid is listed once, in order of appearance. */
static void test_many_pids(void **state)
{
	char *text = NULL, *cause;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct runlog_data *d;
	int round, pid;
	(void)state;

	assert_non_null(f);
	fputs(HEAD, f);
	for (round = 0; round < 3; round++) {
		for (pid = 1; pid <= 1000; pid++)
			fprintf(f, "%d.000 %d 1 1 1 1 1 1 - -\n", round, pid * 7919 % 100003);
		fprintf(f, "%d.000 total 1 1 1 1 1 1 - -\n", round);
	}
	fclose(f);
	d = read_text(text, &cause);
	free(text);
	assert_non_null(d);
	assert_int_equal(d->nsamples, 3003);
	assert_int_equal(d->npids, 1001);
	for (pid = 1; pid <= 1000; pid++)
		assert_int_equal(d->pids[pid - 1], pid * 7919 % 100003);
	assert_int_equal(d->pids[1000], 0);
	assert_false(d->has_pss);
	runlog_data_free(d);
}

static void test_cannot_open(void **state)
{
	char *cause = NULL;
	(void)state;
	assert_null(runlog_read("/nonexistent/run.log", &cause));
	assert_string_equal(cause, "cannot open '/nonexistent/run.log': No such file or directory");
	free(cause);
	cause = NULL;
	assert_null(runlog_read("/", &cause));
	assert_string_equal(cause, "cannot read '/': Is a directory");
	free(cause);
	runlog_data_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_stopped_events),
		cmocka_unit_test(test_cut_last_line),
		cmocka_unit_test(test_not_runlog),
		cmocka_unit_test(test_version2),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_largest_figures),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_many_pids),
		cmocka_unit_test(test_cannot_open),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
