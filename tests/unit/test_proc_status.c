/* test_proc_status.c: unit tests for the one /proc/PID/status parser: every
 * field a caller reads, a nested PID namespace, absent lines, a line cut
 * short, and the end of the lines it reads (Cpus_allowed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc.h"

static const char status_text[] =
	"Name:\tdemo worker\n"
	"Umask:\t0022\n"
	"State:\tt (tracing stop)\n"
	"Tgid:\t4242\n"
	"Ngid:\t0\n"
	"Pid:\t4243\n"
	"PPid:\t17\n"
	"TracerPid:\t99\n"
	"Uid:\t1000\t1001\t1002\t1003\n"
	"Gid:\t2000\t2001\t2002\t2003\n"
	"FDSize:\t64\n"
	"Groups:\t4 24 27\n"
	"NStgid:\t4242\t7\n"
	"NSpid:\t4243\t8\n"
	"VmPeak:\t  20000 kB\n"
	"VmSize:\t  19000 kB\n"
	"VmHWM:\t   7000 kB\n"
	"VmRSS:\t   5000 kB\n"
	"RssAnon:\t   3000 kB\n"
	"RssFile:\t   1500 kB\n"
	"RssShmem:\t    500 kB\n"
	"VmSwap:\t     12 kB\n"
	"SigBlk:\t0000000000000000\n"
	"SigCgt:\t0000000040000600\n"
	"CapEff:\t0000000000080000\n"
	"Seccomp:\t2\n"
	"Cpus_allowed:\tff\n"
	"Tgid:\t1\n";

static void test_fields(void **state)
{
	struct proc_status st;
	char *buf = strdup(status_text);
	(void)state;

	proc_status_parse(buf, &st);
	assert_int_equal(st.state, 't');
	/* the line after Cpus_allowed is not read */
	assert_int_equal(st.tgid, 4242);
	assert_int_equal(st.ppid, 17);
	assert_int_equal(st.tracer, 99);
	assert_int_equal(st.nspid, 8);
	assert_true(st.has_uid);
	assert_int_equal(st.uid[0], 1000);
	assert_int_equal(st.uid[3], 1003);
	assert_int_equal(st.seccomp, 2);
	/* SIGSYS (31) is caught, SIGSEGV (11) and SIGUSR1 (10) too */
	assert_true((st.sigcgt >> (31 - 1)) & 1);
	assert_true((st.sigcgt >> (11 - 1)) & 1);
	assert_true((st.capeff >> 19) & 1);
	assert_int_equal(st.vm_size, 19000);
	assert_int_equal(st.vm_rss, 5000);
	assert_int_equal(st.rss_anon, 3000);
	assert_int_equal(st.rss_file, 1500);
	assert_int_equal(st.rss_shmem, 500);
	assert_int_equal(st.vm_swap, 12);
	assert_int_equal(st.vm_hwm, 7000);
	free(buf);
}

static void test_absent(void **state)
{
	struct proc_status st;
	char buf[] = "Name:\tkthreadd\nState:\tS (sleeping)\nNSpid:\t2\nVm\nTgid";
	(void)state;

	proc_status_parse(buf, &st);
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.nspid, 2);
	assert_false(st.has_uid);
	assert_int_equal(st.tgid, 0);
	assert_int_equal(st.seccomp, -1);
	assert_int_equal(st.vm_rss, 0);
}

static void test_read_self(void **state)
{
	struct proc_status st;
	(void)state;

	assert_int_equal(proc_status_read("/proc/self/status", &st), 0);
	assert_int_equal(st.tgid, getpid());
	assert_int_equal(st.ppid, getppid());
	assert_true(st.has_uid);
	assert_int_equal(st.uid[0], getuid());
	assert_true(st.vm_rss > 0);
	assert_true(proc_status_read("/proc/0/status", &st) < 0);
	assert_int_equal(st.seccomp, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_read_self),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
