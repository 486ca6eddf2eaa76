/* test_cgroup.c: unit tests for the memory cgroup reader: the parsers of
 * /proc/PID/cgroup, of limits (v2 "max", v1's "none" near 2^63) and of the
 * OOM kill counts, and the reader on file trees as the kernel shows them, v2
 * (memory.current, memory.max, memory.events) and v1 (memory.usage_in_bytes,
 * memory.limit_in_bytes, memory.oom_control), in tests/data/cgroup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cgroup.h"

/* A file of tests/data/cgroup (caller frees). */
static char *data(const char *rel)
{
	const char *top = getenv("top_srcdir");
	char *p = malloc(4096);
	snprintf(p, 4096, "%s/tests/data/cgroup/%s", top ? top : ".", rel);
	return p;
}

static void test_parse_path(void **state)
{
	char out[256];
	(void)state;
	/* v1: the memory controller's line, alone or with others */
	assert_true(cgmem_parse_path("12:pids:/a\n4:memory:/jobs/leak\n0::/x\n", true, out, sizeof out));
	assert_string_equal(out, "/jobs/leak");
	assert_true(cgmem_parse_path("3:cpu,memory,blkio:/m\n", true, out, sizeof out));
	assert_string_equal(out, "/m");
	/* "memory" only as a whole controller name */
	assert_false(cgmem_parse_path("3:memoryx:/m\n2:xmemory:/n\n", true, out, sizeof out));
	assert_false(cgmem_parse_path("1:name=systemd:/user.slice\n", true, out, sizeof out));
	/* v2: the "0::" line */
	assert_true(cgmem_parse_path("1:name=systemd:/u\n0::/app.slice/leak.scope\n", false, out,
				     sizeof out));
	assert_string_equal(out, "/app.slice/leak.scope");
	assert_true(cgmem_parse_path("0::/\n", false, out, sizeof out));
	assert_string_equal(out, "/");
	assert_false(cgmem_parse_path("4:memory:/a\n", false, out, sizeof out));
	/* a last line without its newline; a path too long for out */
	assert_true(cgmem_parse_path("0::/last", false, out, sizeof out));
	assert_string_equal(out, "/last");
	assert_false(cgmem_parse_path("0::/0123456789", false, out, 8));
	assert_false(cgmem_parse_path("", false, out, sizeof out));
	assert_false(cgmem_parse_path("garbage\n", true, out, sizeof out));
}

static void test_parse_limit(void **state)
{
	uint64_t v = 1;
	(void)state;
	assert_true(cgmem_parse_limit("max\n", &v));
	assert_int_equal(v, 0);
	assert_true(cgmem_parse_limit("167772160\n", &v));
	assert_int_equal(v, 167772160);
	/* v1 without a limit: PAGE_COUNTER_MAX pages of 4 KiB */
	assert_true(cgmem_parse_limit("9223372036854771712\n", &v));
	assert_int_equal(v, 0);
	assert_false(cgmem_parse_limit("maximum\n", &v));
	assert_false(cgmem_parse_limit("12k\n", &v));
	assert_false(cgmem_parse_limit("", &v));
	assert_false(cgmem_parse_limit("-1\n", &v));
}

static void test_parse_oom_kills(void **state)
{
	uint64_t n = 9;
	(void)state;
	/* v2 memory.events: oom_group_kill is another line */
	assert_true(cgmem_parse_oom_kills("low 0\nhigh 0\nmax 5\noom 3\noom_kill 2\noom_group_kill 7\n", &n));
	assert_int_equal(n, 2);
	assert_true(cgmem_parse_oom_kills("oom_group_kill 7\noom_kill 4\n", &n));
	assert_int_equal(n, 4);
	/* v1 memory.oom_control */
	assert_true(cgmem_parse_oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n", &n));
	assert_int_equal(n, 1);
	/* a kernel older than 4.13 counts none */
	assert_false(cgmem_parse_oom_kills("oom_kill_disable 0\nunder_oom 0\n", &n));
	assert_false(cgmem_parse_oom_kills("oom_kill x\n", &n));
}

static void test_seconds_to_limit(void **state)
{
	(void)state;
	assert_true(cgmem_seconds_to_limit(100, 0, 10) < 0);         /* no limit */
	assert_true(cgmem_seconds_to_limit(100, 200, 0) < 0);        /* not growing */
	assert_true(cgmem_seconds_to_limit(100, 200, -5) < 0);       /* shrinking */
	assert_true(cgmem_seconds_to_limit(100, 200, 10) == 10.0);
	assert_true(cgmem_seconds_to_limit(300, 200, 10) == 0.0);    /* over it */
}

static void test_trend(void **state)
{
	struct cgmem_trend tr;
	double rate = 0;
	(void)state;
	memset(&tr, 0, sizeof tr);
	cgmem_trend_push(&tr, 0, 100);
	cgmem_trend_push(&tr, 0.1, 5000);       /* too close to the last: left out */
	cgmem_trend_push(&tr, 0.5, 150);
	assert_false(cgmem_trend_rate(&tr, &rate));   /* two points, half a second */
	cgmem_trend_push(&tr, 1.0, 200);
	assert_true(cgmem_trend_rate(&tr, &rate));
	assert_true(rate > 99.9 && rate < 100.1);
	/* a minute later, only the last 10 s count: flat, then 1000 B/s */
	for (int i = 0; i <= 100; i++)
		cgmem_trend_push(&tr, 2.0 + i * 0.5, i < 80 ? 200 : 200 + (i - 80) * 500.0);
	assert_true(cgmem_trend_rate(&tr, &rate));
	assert_true(rate > 900 && rate < 1100);
}

static void test_read_v2(void **state)
{
	char *proc = data("v2/proc-cgroup"), *root = data("v2/sys");
	struct cgmem *cg = cgmem_new_at(proc, NULL, root);
	struct cgmem_sample s;
	uint64_t n = 0;
	(void)state;
	assert_int_equal(cgmem_read(cg, &s), 0);
	assert_true(s.found);
	assert_int_equal(s.version, 2);
	assert_int_equal(s.usage, 167309312);
	assert_int_equal(s.limit, 167772160);
	assert_true(s.have_oom_kills);
	assert_int_equal(s.oom_kills, 2);
	/* the held file, as when the process is gone */
	assert_int_equal(cgmem_oom_kills_now(cg, &n), 0);
	assert_int_equal(n, 2);
	cgmem_free(cg);
	free(proc);

	/* memory.max "max": no limit */
	proc = data("v2/proc-cgroup-nolimit");
	cg = cgmem_new_at(proc, NULL, root);
	assert_int_equal(cgmem_read(cg, &s), 0);
	assert_int_equal(s.usage, 4096000);
	assert_int_equal(s.limit, 0);
	assert_int_equal(s.oom_kills, 0);
	cgmem_free(cg);
	free(proc);

	/* the root cgroup: the whole machine, not a memory cgroup of its own */
	proc = data("v2/proc-cgroup-root");
	cg = cgmem_new_at(proc, NULL, root);
	assert_int_equal(cgmem_read(cg, &s), -1);
	assert_false(s.found);
	assert_int_equal(cgmem_oom_kills_now(cg, &n), -1);
	cgmem_free(cg);
	free(proc);
	free(root);
}

/* A process that moves to another cgroup is followed at the 16th reading. */
static void test_moved(void **state)
{
	char proc[] = "/tmp/test_cgroup.XXXXXX", *root = data("v2/sys");
	int fd = mkstemp(proc);
	struct cgmem *cg;
	struct cgmem_sample s;
	FILE *f;
	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0::/app.slice/leak.scope\n", 25), 25);
	close(fd);
	cg = cgmem_new_at(proc, NULL, root);
	assert_int_equal(cgmem_read(cg, &s), 0);
	assert_int_equal(s.limit, 167772160);
	f = fopen(proc, "w");
	fputs("0::/app.slice/nolimit.scope\n", f);
	fclose(f);
	for (int i = 1; i < 16; i++) {
		assert_int_equal(cgmem_read(cg, &s), 0);
		assert_int_equal(s.limit, 167772160);
	}
	assert_int_equal(cgmem_read(cg, &s), 0);
	assert_int_equal(s.limit, 0);
	assert_int_equal(s.usage, 4096000);
	cgmem_free(cg);
	unlink(proc);
	free(root);
}

static void test_read_v1(void **state)
{
	char *proc = data("v1/proc-cgroup"), *root = data("v1/memory"), *v2 = data("v2/sys");
	struct cgmem *cg;
	struct cgmem_sample s;
	(void)state;
	/* a hybrid: the memory controller is v1's, whatever the v2 line says */
	cg = cgmem_new_at(proc, root, v2);
	assert_int_equal(cgmem_read(cg, &s), 0);
	assert_int_equal(s.version, 1);
	assert_int_equal(s.usage, 52428800);
	assert_int_equal(s.limit, 167772160);
	assert_true(s.have_oom_kills);
	assert_int_equal(s.oom_kills, 1);
	cgmem_free(cg);

	/* no such process: nothing */
	cg = cgmem_new_at("/nonexistent/cgroup", root, v2);
	assert_int_equal(cgmem_read(cg, &s), -1);
	assert_false(s.found);
	cgmem_free(cg);
	free(proc);
	free(root);
	free(v2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_path),
		cmocka_unit_test(test_parse_limit),
		cmocka_unit_test(test_parse_oom_kills),
		cmocka_unit_test(test_seconds_to_limit),
		cmocka_unit_test(test_trend),
		cmocka_unit_test(test_read_v2),
		cmocka_unit_test(test_moved),
		cmocka_unit_test(test_read_v1),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
