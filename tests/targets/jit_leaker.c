/* jit_leaker.c: a target with "JIT" code: a stub written at run time into an
 * executable mapping (no ELF, no unwind info) calls leak_fn, which leaks; the
 * stub's range and name are in /tmp/perf-PID.map, as runtimes with a JIT
 * write it (node --perf-basic-prof, Python -X perf): jit_leaker [COUNT].
 * Prints "ready" once it has leaked, then waits at most a minute. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void *kept[4096]; /* global: the compiler must keep the blocks */
static int nkept;

__attribute__((noinline)) void leak_fn(void)
{
	kept[nkept++ % 4096] = malloc(64 * 1024);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 16;
	/* push rbp; mov rbp,rsp; movabs rax,leak_fn; call rax; pop rbp; ret */
	unsigned char code[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,
				 0xff, 0xd0, 0x5d, 0xc3 };
	uintptr_t fn = (uintptr_t)leak_fn;
	unsigned char *page;
	char path[64];
	FILE *f;

	memcpy(code + 6, &fn, sizeof fn);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 1;
	memcpy(page, code, sizeof code);
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0)
		return 1;
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx LazyCompile:*handleRequest server.js:42\n", (unsigned long)(uintptr_t)page,
		sizeof code);
	fclose(f);
	usleep(300000); /* a preloaded agent starts its capture meanwhile */
	for (int i = 0; i < count; i++)
		((void (*)(void))page)();
	printf("ready\n");
	fflush(stdout);
	for (int t = 0; t < 600; t++)
		usleep(100000);
	unlink(path);
	return 0;
}
