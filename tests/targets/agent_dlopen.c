/* agent_dlopen.c: loads libagent_late.so after start and uses it.
 * Usage: agent_dlopen rpath|path LIB|dlmopen LIB|reload LIB
 *   rpath:   dlopen("libagent_late.so"), found only along this program's own
 *            RUNPATH ($ORIGIN/.libs), as the loader would for its caller
 *   path:    dlopen(LIB)
 *   dlmopen: dlmopen(LM_ID_BASE, LIB), which no GOT hook sees
 *   reload:  dlopen(LIB), use it, dlclose it, and dlopen it again (likely at
 *            the same address: its new GOT must be hooked all the same)
 * Prints "ready 0" once loaded, waits for a line, calls late_keep(), prints
 * "ready 1", waits, checks and frees through late_release(), prints "ok". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int wait_line(int phase)
{
	char line[64];
	printf("ready %d\n", phase);
	fflush(stdout);
	return fgets(line, sizeof line, stdin) != NULL;
}

int main(int argc, char **argv)
{
	void *h;
	void (*keep)(void);
	int (*release)(void);

	if (argc >= 2 && strcmp(argv[1], "rpath") == 0)
		h = dlopen("libagent_late.so", RTLD_NOW);
	else if (argc == 3 && strcmp(argv[1], "path") == 0)
		h = dlopen(argv[2], RTLD_NOW);
	else if (argc == 3 && strcmp(argv[1], "dlmopen") == 0)
		h = dlmopen(LM_ID_BASE, argv[2], RTLD_NOW);
	else if (argc == 3 && strcmp(argv[1], "reload") == 0) {
		h = dlopen(argv[2], RTLD_NOW);
		keep = h ? (void (*)(void))dlsym(h, "late_keep") : NULL;
		release = h ? (int (*)(void))dlsym(h, "late_release") : NULL;
		if (!keep || !release)
			return 1;
		keep();
		if (release() || dlclose(h) != 0)
			return 1;
		h = dlopen(argv[2], RTLD_NOW);
	} else
		return 2;
	if (!h) {
		printf("dlopen failed: %s\n", dlerror());
		return 1;
	}
	if (dlerror() != NULL) {
		printf("dlerror set after a successful dlopen\n");
		return 1;
	}
	keep = (void (*)(void))dlsym(h, "late_keep");
	release = (int (*)(void))dlsym(h, "late_release");
	if (!keep || !release)
		return 1;
	if (!wait_line(0))
		return 3;
	keep();
	if (!wait_line(1))
		return 3;
	if (release())
		return 1;
	printf("ok\n");
	return 0;
}
