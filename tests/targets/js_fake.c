/* js_fake.c: a program that looks like a node whose V8 the agent does not
 * read: it exports v8::V8::GetVersion (V8 9.4, node 16's) and
 * v8::Isolate::TryGetCurrent by their mangled names, and allocates with malloc
 * from a known function until a line on stdin. The agent must capture it
 * native-only, say so, and never call into it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int calls;

const char *_ZN2v82V810GetVersionEv(void)
{
	return "9.4.146.26-node.26";
}

/* never to be called: the agent must not touch a V8 it does not read */
void *_ZN2v87Isolate13TryGetCurrentEv(void)
{
	calls++;
	return NULL;
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
	if (calls) {
		printf("V8 was called %d times\n", calls);
		return 1;
	}
	printf("ok\n");
	return 0;
}
