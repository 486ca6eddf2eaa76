/* agent_got.c: reports what its own GOT says malloc and free are, against the
 * C library's functions, each time a line arrives on stdin: "ready N same=M"
 * with M the number of the two slots that hold the C library's own function
 * (2: untouched or restored, 0: both hooked). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* The GOT slot's current value: the compiler would load it once and keep it,
 * since to C the address of a function never changes. */
#define GOT_SLOT(sym, out) __asm__ volatile("movq " #sym "@GOTPCREL(%%rip), %0" : "=r"(out))

int main(void)
{
	char line[64];
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *real_malloc = libc ? dlsym(libc, "malloc") : NULL;
	void *real_free = libc ? dlsym(libc, "free") : NULL;
	for (int n = 1;; n++) {
		void *m, *f;
		GOT_SLOT(malloc, m);
		GOT_SLOT(free, f);
		free(malloc(100));
		printf("ready %d same=%d\n", n, (m == real_malloc) + (f == real_free));
		fflush(stdout);
		if (!fgets(line, sizeof line, stdin))
			break;
		if (line[0] == 'q')
			break;
	}
	printf("ok\n");
	return 0;
}
