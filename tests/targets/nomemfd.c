/* nomemfd.c: a service under a seccomp filter that forbids memfd_create
 * (EPERM), as hardened container profiles may. It grows by about 4 MiB a
 * second from nomemfd_keep for the given number of seconds (default 30).
 * Prints "filtered" once the filter is in place. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* memfd_create fails with EPERM; every other call is allowed. */
static int forbid_memfd(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static void **kept;
static size_t nkept;

/* The growth memwatch must name. */
static __attribute__((noinline)) void nomemfd_keep(size_t n)
{
	char *p = malloc(n);
	if (!p)
		abort();
	memset(p, 1, n);
	kept[nkept++] = p;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 30;

	if (forbid_memfd() < 0) {
		perror("nomemfd: seccomp");
		return 1;
	}
	if (syscall(SYS_memfd_create, "probe", 0) >= 0 || errno != EPERM) {
		fprintf(stderr, "nomemfd: memfd_create is not refused\n");
		return 1;
	}
	printf("filtered\n");
	fflush(stdout);
	kept = calloc((size_t)seconds * 100 + 1, sizeof *kept);
	if (!kept)
		return 1;
	for (int i = 0; i < seconds * 100; i++) {
		nomemfd_keep(40 * 1024);
		usleep(10000);
	}
	return 0;
}
