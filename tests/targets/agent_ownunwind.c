/* agent_ownunwind.c: a program that unwinds its own stack with a libunwind of
 * its own, to show that the agent (which carries a private libunwind) leaves
 * it alone. Built twice: with Debian's libunwind8 (unw_backtrace) and with
 * LLVM's libunwind (_Unwind_Backtrace, -DLLVM_UNWIND).
 * Prints "uses LIB" (the module its unwinder is bound to) and its backtrace as
 * "bt N: MODULE+OFFSET SYMBOL" lines, then "ready 0". At each line on stdin
 * it grows by 64 blocks of 1 MiB from own_grow over about 3 s, prints the
 * module and the backtrace again, and "ready N". At end of file: "ok". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef LLVM_UNWIND
#include <unwind.h>
#else
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#define DEPTH 64

#ifdef LLVM_UNWIND
struct bt {
	void **ips;
	int n;
};

static _Unwind_Reason_Code one_frame(struct _Unwind_Context *c, void *arg)
{
	struct bt *b = arg;
	if (b->n >= DEPTH)
		return _URC_END_OF_STACK;
	b->ips[b->n++] = (void *)_Unwind_GetIP(c);
	return _URC_NO_REASON;
}
#define UNWINDER ((void *)&_Unwind_Backtrace)
#else
#define UNWINDER ((void *)&unw_backtrace)
#endif

/* Print the module the unwinder comes from. */
static void print_unwinder(void)
{
	Dl_info di;
	const char *b;
	if (!dladdr(UNWINDER, &di) || !di.dli_fname) {
		printf("uses ?\n");
		return;
	}
	b = strrchr(di.dli_fname, '/');
	printf("uses %s\n", b ? b + 1 : di.dli_fname);
}

/* The backtrace of its caller, frame by frame, module-relative. */
__attribute__((noinline)) void own_trace(int round)
{
	void *ips[DEPTH];
	int n;
#ifdef LLVM_UNWIND
	struct bt b = { ips, 0 };
	_Unwind_Backtrace(one_frame, &b);
	n = b.n;
#else
	n = unw_backtrace(ips, DEPTH);
#endif
	for (int i = 0; i < n; i++) {
		Dl_info di;
		const char *m = "?", *s = "";
		uintptr_t base = 0;
		if (dladdr(ips[i], &di) && di.dli_fname) {
			m = strrchr(di.dli_fname, '/') ? strrchr(di.dli_fname, '/') + 1 : di.dli_fname;
			base = (uintptr_t)di.dli_fbase;
			s = di.dli_sname ? di.dli_sname : "";
		}
		printf("bt %d: %s+0x%lx %s\n", round, m, (unsigned long)((uintptr_t)ips[i] - base), s);
	}
	printf("bt %d: %d frames\n", round, n);
}

__attribute__((noinline)) void own_level2(int round)
{
	own_trace(round);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void own_level1(int round)
{
	own_level2(round);
	__asm__ volatile("" ::: "memory");
}

static void *kept[4096];
static int nkept;

/* The growth memwatch must name. */
__attribute__((noinline)) void own_grow(void)
{
	for (int i = 0; i < 64 && nkept < 4096; i++) {
		char *p = malloc(1 << 20);
		if (!p)
			abort();
		memset(p, i, 1 << 20);
		kept[nkept++] = p;
		usleep(45000);
	}
}

/* From one call site, so that every round's stack is the same. */
__attribute__((noinline)) void own_report(int round)
{
	print_unwinder();
	own_level1(round);
	printf("ready %d\n", round);
}

int main(void)
{
	char line[64];
	int round = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		own_report(round);
		if (!fgets(line, sizeof line, stdin))
			break;
		own_grow();
		round++;
	}
	printf("ok\n");
	return 0;
}
