/* agent_paths.c: allocations whose stacks differ only above the allocating
 * function, at one and the same depth, in turns, so that each sample's stack
 * pointer and hook are the same as the one before and only the return
 * addresses further up tell the paths apart:
 *   via_a -> leaf (100 B) and via_b -> leaf (300 B), N of each;
 *   outer_a -> mid -> leaf (500 B) and outer_b -> mid -> leaf (700 B);
 *   at a varying depth: deep(d) -> ... -> deep(0) -> leaf (1300 B), d = i % 4;
 *   on a coroutine's stack (makecontext): in_fiber -> leaf (900 B); that stack
 *   freed, a new one (likely at the same address) for in_fiber2 -> leaf
 *   (1100 B).
 * Everything is held; prints "ready 1" and waits for a line on stdin, then
 * frees it all, checks the blocks and prints "ok". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#define N 1000
#define FIBER_STACK (256 * 1024)

static unsigned char *kept[7][N];
static ucontext_t main_ctx, fiber_ctx;

#define OPAQUE(p) __asm__ volatile("" : : "r"(p) : "memory")

__attribute__((noinline, noclone)) static unsigned char *leaf(size_t n, int tag)
{
	unsigned char *p = malloc(n);
	if (!p)
		exit(2);
	memset(p, tag, n);
	OPAQUE(p);
	return p;
}

__attribute__((noinline, noclone)) static unsigned char *via_a(size_t n)
{
	unsigned char *p = leaf(n, 'a');
	p[1] = 'a';
	OPAQUE(p);
	return p;
}

__attribute__((noinline, noclone)) static unsigned char *via_b(size_t n)
{
	unsigned char *p = leaf(n, 'b');
	p[1] = 'b';
	OPAQUE(p);
	return p;
}

__attribute__((noinline, noclone)) static unsigned char *mid(size_t n, int tag)
{
	unsigned char *p = leaf(n, tag);
	OPAQUE(p);
	return p;
}

__attribute__((noinline, noclone)) static unsigned char *outer_a(size_t n)
{
	unsigned char *p = mid(n, 'c');
	p[1] = 'c';
	OPAQUE(p);
	return p;
}

__attribute__((noinline, noclone)) static unsigned char *outer_b(size_t n)
{
	unsigned char *p = mid(n, 'd');
	p[1] = 'd';
	OPAQUE(p);
	return p;
}

__attribute__((noinline, noclone)) static unsigned char *deep(int d)
{
	unsigned char *p = d ? deep(d - 1) : leaf(1300, 'g');
	OPAQUE(p);
	return p;
}

__attribute__((noinline, noclone)) static void in_fiber(void)
{
	for (int i = 0; i < N; i++)
		kept[4][i] = leaf(900, 'e');
}

__attribute__((noinline, noclone)) static void in_fiber2(void)
{
	for (int i = 0; i < N; i++)
		kept[5][i] = leaf(1100, 'f');
}

static int run_fiber(void (*fn)(void))
{
	void *stack = malloc(FIBER_STACK);
	if (!stack || getcontext(&fiber_ctx) != 0)
		return -1;
	fiber_ctx.uc_stack.ss_sp = stack;
	fiber_ctx.uc_stack.ss_size = FIBER_STACK;
	fiber_ctx.uc_link = &main_ctx;
	makecontext(&fiber_ctx, fn, 0);
	if (swapcontext(&main_ctx, &fiber_ctx) != 0)
		return -1;
	memset(stack, 0x5a, FIBER_STACK);
	free(stack);
	return 0;
}

int main(void)
{
	static const int tags[7] = { 'a', 'b', 'c', 'd', 'e', 'f', 'g' };
	static const size_t sizes[7] = { 100, 300, 500, 700, 900, 1100, 1300 };
	char line[64];
	int bad = 0;

	for (int i = 0; i < N; i++) {
		kept[0][i] = via_a(100);
		kept[1][i] = via_b(300);
		kept[2][i] = outer_a(500);
		kept[3][i] = outer_b(700);
		kept[6][i] = deep(i % 4);
	}
	if (run_fiber(in_fiber) != 0 || run_fiber(in_fiber2) != 0)
		return 4;
	printf("ready 1\n");
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 3;
	for (int s = 0; s < 7; s++)
		for (int i = 0; i < N; i++) {
			bad += kept[s][i][0] != tags[s] || kept[s][i][sizes[s] - 1] != tags[s];
			free(kept[s][i]);
		}
	if (bad) {
		printf("corrupt %d\n", bad);
		return 1;
	}
	printf("ok\n");
	return 0;
}
