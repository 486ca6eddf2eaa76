/* py_fake.c: a program that looks like a CPython the agent cannot read: it
 * publishes its version as 3.7 does (Py_GetVersion, no Py_Version) and exports
 * the allocator API by name (built with FAKE_PY_VERSION, as 3.11 on do:
 * Py_Version, and _PyRuntime starting with the _Py_DebugOffsets of a build
 * FAKE_FREE_THREADED or not), and allocates with
 * malloc from a known function until its stdin closes or says so. The agent
 * must capture it native-only and say so. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FAKE_PY_VERSION
const unsigned long Py_Version = FAKE_PY_VERSION;
/* _Py_DebugOffsets: its cookie, the version it describes, free_threaded */
struct {
	char cookie[8];
	uint64_t version, free_threaded;
	uint64_t rest[256];
} _PyRuntime = { "xdebugpy", FAKE_PY_VERSION, FAKE_FREE_THREADED, { 0 } };
#endif

const char *Py_GetVersion(void)
{
	return "3.7.16 (default, a program posing as CPython) [GCC]";
}

typedef struct {
	void *ctx;
	void *(*malloc)(void *, size_t);
	void *(*calloc)(void *, size_t, size_t);
	void *(*realloc)(void *, void *, size_t);
	void (*free)(void *, void *);
} fake_allocator;

static int set_calls;

int Py_IsInitialized(void)
{
	return 1;
}

int _Py_IsFinalizing(void)
{
	return 0;
}

void PyMem_GetAllocator(int domain, fake_allocator *a)
{
	(void)domain;
	memset(a, 0, sizeof *a);
}

/* never to be called: the agent must not touch an interpreter it cannot read */
void PyMem_SetAllocator(int domain, fake_allocator *a)
{
	(void)domain;
	(void)a;
	set_calls++;
}

static void *volatile keep[4096];

__attribute__((noinline)) static void fake_native_site(int i)
{
	keep[i % 4096] = malloc(64 * 1024);
	memset(keep[i % 4096], 1, 64 * 1024);
}

int main(void)
{
	char line[16];
	int i;
	printf("ready\n");
	fflush(stdout);
	for (i = 0; i < 4096; i++)
		fake_native_site(i);
	if (!fgets(line, sizeof line, stdin))
		return 2;
	if (set_calls) {
		printf("PyMem_SetAllocator was called %d times\n", set_calls);
		return 1;
	}
	printf("ok\n");
	return 0;
}
