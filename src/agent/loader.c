/* loader.c: the loader lock, held (shared) around the agent's own use of
 * libunwind and the dynamic loader, and taken exclusively around fork, so that
 * a forked child never inherits a lock of theirs held for the agent. */
#include "config.h"

#include <sched.h>
#include <string.h>
#include <time.h>

#include "agent.h"

/* Held (shared) by the agent whenever it is inside libunwind or the dynamic
 * loader on its own initiative, and taken exclusively around fork: a child then
 * never inherits a lock that libunwind or the loader held for the agent, which
 * would hang the child's first unwinding. Readers count themselves in one of
 * several counters (by thread), so that samples on many threads do not share
 * one cache line; a fork raises the writer flag, which holds new readers back
 * (spinning, then yielding), and waits for the counters to drain. The wait is
 * bounded (a fork from a constructor, with the loader's lock held, while the
 * control thread waits for that lock) and a child forked without the lock
 * never captures. */
#define READER_SLOTS 16
static struct {
	unsigned n;
} __attribute__((aligned(64))) loader_readers[READER_SLOTS];
static int loader_writer __attribute__((aligned(64)));
static bool fork_has_loader_lock;
bool mw_fork_tainted;

static unsigned reader_slot(void)
{
	uint64_t a = (uintptr_t)&mw_tls;
	return (unsigned)((a * 0x9E3779B97F4A7C15ull) >> 60) & (READER_SLOTS - 1);
}

void mw_loader_enter(void)
{
	unsigned s = reader_slot(), n = 0;
	for (;;) {
		__atomic_fetch_add(&loader_readers[s].n, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&loader_writer, __ATOMIC_SEQ_CST))
			return;
		__atomic_fetch_sub(&loader_readers[s].n, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&loader_writer, __ATOMIC_RELAXED)) {
			mw_spin_turn(&n);
		}
	}
}

void mw_loader_leave(void)
{
	__atomic_fetch_sub(&loader_readers[reader_slot()].n, 1, __ATOMIC_RELEASE);
}

/* Take the loader lock exclusively, giving up at deadline (CLOCK_MONOTONIC). */
static bool loader_lock_exclusive(const struct timespec *deadline)
{
	struct timespec now, nap = { 0, 200000 };
	unsigned i;
	for (;;) {
		int zero = 0;
		if (__atomic_compare_exchange_n(&loader_writer, &zero, 1, false, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED))
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > deadline->tv_sec ||
		    (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec))
			return false;
		nanosleep(&nap, NULL);
	}
	for (;;) {
		bool busy = false;
		for (i = 0; i < READER_SLOTS && !busy; i++)
			busy = __atomic_load_n(&loader_readers[i].n, __ATOMIC_SEQ_CST) != 0;
		if (!busy)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > deadline->tv_sec ||
		    (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec)) {
			__atomic_store_n(&loader_writer, 0, __ATOMIC_SEQ_CST);
			return false;
		}
		sched_yield();
	}
}

/* Before a fork: the lock exclusively, for at most 2 s. */
void mw_loader_atfork_prepare(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += 2;
	fork_has_loader_lock = loader_lock_exclusive(&ts);
}

void mw_loader_atfork_parent(void)
{
	if (fork_has_loader_lock)
		__atomic_store_n(&loader_writer, 0, __ATOMIC_SEQ_CST);
}

/* The child is alone: the lock is free; without it taken, the child never
 * captures (mw_fork_tainted). */
void mw_loader_atfork_child(void)
{
	memset(loader_readers, 0, sizeof loader_readers);
	loader_writer = 0;
	if (!fork_has_loader_lock)
		mw_fork_tainted = true;
}
