/* deep_stack.c MODE [KIB]: a thread deep in its stack, for the attach tests.
 * limit: the main thread recurses (descend, 32 KiB a frame: fewer frames than
 * an unwinder gives up at) until its stack pointer is KIB (24) KiB above the floor
 * RLIMIT_STACK sets, then waits in nanosleep there, allocating 64 KiB a
 * second (keep_going): no room for an injected call.
 * fresh: it recurses 3 MiB deep touching only the top of each frame, then
 * spins in a frame of 1 MiB it never touches (spin_deep): its stack pointer
 * sits 1 MiB below the lowest page of the stack the kernel has mapped.
 * It says "ready" on standard output when there, and runs until killed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile char sink;
static volatile long spins;
static volatile int stop;     /* never set: the loops run until the process is killed */
static uintptr_t floor_at;
static uintptr_t room = 24 * 1024;   /* left above the floor at the bottom */

static void say_ready(void)
{
	static const char msg[] = "ready\n";
	if (write(1, msg, sizeof msg - 1) < 0)
		_exit(2);
}

static uintptr_t stack_pointer(void)
{
	return (uintptr_t)__builtin_frame_address(0);
}

static __attribute__((noinline)) void keep_going(void)
{
	/* the rest of the way down to room above the floor, touched */
	size_t down = stack_pointer() - (floor_at + room);
	volatile char *low = __builtin_alloca(down);
	low[0] = 1;
	say_ready();
	while (!stop) {
		struct timespec ts = { 1, 0 };
		nanosleep(&ts, NULL);
		sink = *(volatile char *)memset(malloc(65536), 1, 65536);
	}
}

static __attribute__((noinline)) void descend(void)
{
	volatile char frame[32768];
	memset((char *)frame, 1, sizeof frame);
	if (stack_pointer() > floor_at + room + 2 * sizeof frame)
		descend();
	else
		keep_going();
	sink = frame[0];
}

static __attribute__((noinline)) void spin_deep(void)
{
	volatile char big[1 << 20];
	say_ready();
	while (!stop)
		spins++;
	big[0] = 1;
	sink = big[0];
}

static __attribute__((noinline)) void descend_fresh(int n)
{
	volatile char buf[65536];
	buf[sizeof buf - 1] = (char)n;
	if (n > 0)
		descend_fresh(n - 1);
	else
		spin_deep();
	sink = buf[sizeof buf - 1];
}

/* The top of the main thread's stack, from /proc/self/maps. */
static uintptr_t stack_top(void)
{
	char line[512];
	unsigned long lo, hi;
	FILE *f = fopen("/proc/self/maps", "r");
	uintptr_t top = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			top = hi;
	fclose(f);
	return top;
}

int main(int argc, char **argv)
{
	struct rlimit rl;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && strcmp(argv[1], "fresh") == 0) {
		descend_fresh(48);
		return 0;
	}
	if (getrlimit(RLIMIT_STACK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > (64u << 20) || !stack_top()) {
		fprintf(stderr, "deep_stack: needs a stack limit of 64 MiB or less\n");
		return 3;
	}
	floor_at = stack_top() - rl.rlim_cur;
	if (argc > 2)
		room = (uintptr_t)strtoul(argv[2], NULL, 10) * 1024;
	descend();
	return 0;
}
