/* unwind.c: the allocating thread's call stack, for heap.c's samples.
 * libunwind's unw_backtrace keeps a frame cache per thread, 256 KiB
 * that it writes in full the first time the thread unwinds and frees when the
 * thread exits: a program with 2000 threads that each allocate a little paid
 * 500 MB of RSS for it, even at the default rate. So only unw_slots_max threads
 * alive at once (128 by default: 32 MiB of caches) unwind with it; any other thread
 * walks with libunwind's cursor, which costs more per frame and no memory of
 * its own. A thread gives its place back when it exits (a thread-specific key's
 * destructor), and takes one as soon as one is free. */
#include "config.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

enum mw_unw_slot {
	UNW_NO_SLOT,         /* cursor walks; takes a place when one is free */
	UNW_SLOT,            /* holds a place: unw_backtrace */
	UNW_EXITING,         /* gave its place back at exit: never again */
};
static unsigned unw_slots_used __attribute__((aligned(64)));
static unsigned unw_slots_max = MW_DEFAULT_UNWIND_THREADS;
static unsigned ncpus = 1;            /* processors online, for walk_lock_take */
static pthread_key_t unw_slot_key;
static bool unw_slot_key_ok;

/* The thread exits (or its key is destroyed): its place is free again. */
static void unw_slot_release(void *unused)
{
	(void)unused;
	if (mw_tls.unw == UNW_SLOT)
		__atomic_fetch_sub(&unw_slots_used, 1, __ATOMIC_RELAXED);
	mw_tls.unw = UNW_EXITING;
}

/* Create the key once, from the control thread (capture start). */
void mw_unwind_init(void)
{
	long c = sysconf(_SC_NPROCESSORS_ONLN);
	ncpus = c > 0 ? (unsigned)c : 1;
	if (!unw_slot_key_ok && pthread_key_create(&unw_slot_key, unw_slot_release) == 0)
		unw_slot_key_ok = true;
}

/* May this thread use unw_backtrace's cache? Takes a place if there is one.
 * Without the key (pthread_key_create failed) places are never given back:
 * the bound holds, only more threads walk the slow way. */
static bool unw_slot(void)
{
	unsigned n;
	if (likely(mw_tls.unw == UNW_SLOT))
		return true;
	if (mw_tls.unw == UNW_EXITING)
		return false;
	n = __atomic_load_n(&unw_slots_used, __ATOMIC_RELAXED);
	do {
		if (n >= __atomic_load_n(&unw_slots_max, __ATOMIC_RELAXED))
			return false;
	} while (!__atomic_compare_exchange_n(&unw_slots_used, &n, n + 1, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	mw_tls.unw = UNW_SLOT;
	/* pthread_setspecific may allocate (keys past the first 32): the agent's
	 * guard is up, so that goes to the allocator unsampled. */
	if (unw_slot_key_ok)
		pthread_setspecific(unw_slot_key, (void *)1);
	return true;
}

/* The unwind-threads option: at most n threads hold a place (those that hold
 * one already keep it). */
void mw_unwind_threads(unsigned n)
{
	__atomic_store_n(&unw_slots_max, n, __ATOMIC_RELAXED);
}

/* The call stack with libunwind's cursor, innermost first (the same frames as
 * unw_backtrace gives). Each step takes the lock of libunwind's global cache,
 * a mutex that sleeps when contended (and two sigprocmask calls), so the walks
 * are taken one at a time under a lock of ours. While the waiters are few (at
 * most 4 per processor) they take turns by spinning and yielding, never
 * sleeping. Hundreds of them (2000 threads at rate 1) would yield to each
 * other while the holder waits for a processor, so past that a waiter sleeps
 * on a futex as a mutex does: state 2 says someone may sleep, and a thread
 * that has begun to sleep takes the lock only as 2, so that its release wakes
 * the next one. No other agent lock is held meanwhile (the loader lock's
 * shared side is, so a fork never finds this one taken). */
static int walk_lock __attribute__((aligned(64)));     /* 0 free, 1 held, 2 held, sleepers */
static unsigned walk_waiters __attribute__((aligned(64)));

static bool walk_lock_try(void)
{
	int v = 0;
	return __atomic_compare_exchange_n(&walk_lock, &v, 1, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static void walk_lock_take(void)
{
	unsigned n = 0;
	if (walk_lock_try())
		return;
	__atomic_fetch_add(&walk_waiters, 1, __ATOMIC_RELAXED);
	while (__atomic_load_n(&walk_waiters, __ATOMIC_RELAXED) <= 4 * ncpus) {
		if (!__atomic_load_n(&walk_lock, __ATOMIC_RELAXED) && walk_lock_try())
			goto out;
		mw_spin_turn(&n);
	}
	while (__atomic_exchange_n(&walk_lock, 2, __ATOMIC_ACQUIRE) != 0)
		syscall(SYS_futex, &walk_lock, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
out:
	__atomic_fetch_sub(&walk_waiters, 1, __ATOMIC_RELAXED);
}

static void walk_lock_release(void)
{
	if (__atomic_exchange_n(&walk_lock, 0, __ATOMIC_RELEASE) == 2)
		syscall(SYS_futex, &walk_lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static __attribute__((noinline)) int walk_cursor(uintptr_t *ips, int cap)
{
	unw_context_t uc;
	unw_cursor_t c;
	int n = 0;
	walk_lock_take();
	if (unw_getcontext(&uc) == 0 && unw_init_local(&c, &uc) == 0) {
		do {
			unw_word_t ip;
			if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || !ip)
				break;
			ips[n++] = (uintptr_t)ip;
		} while (n < cap && unw_step(&c) > 0);
	}
	walk_lock_release();
	return n;
}

/* The same walk, with each frame's stack pointer (sps[i]: the canonical frame
 * address of frame i - 1, where the return address ips[i] was read from, at
 * sps[i] - 8, for an ordinary frame). *clean: the walk ended at the outermost
 * frame (not at cap, nor at an error) and crossed no signal frame. Used by
 * stack-cache.c on a miss. */
int mw_unwind_walk_sp(uintptr_t *ips, uintptr_t *sps, int cap, bool *clean)
{
	unw_context_t uc;
	unw_cursor_t c;
	int n = 0, r = -1;
	*clean = false;
	walk_lock_take();
	if (unw_getcontext(&uc) == 0 && unw_init_local(&c, &uc) == 0) {
		for (;;) {
			unw_word_t ip, sp;
			if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || !ip ||
			    unw_get_reg(&c, UNW_REG_SP, &sp) < 0) {
				r = -1;
				break;
			}
			if (unw_is_signal_frame(&c) > 0) {
				r = -1;
				break;
			}
			ips[n] = (uintptr_t)ip;
			sps[n] = (uintptr_t)sp;
			if (++n == cap) {
				r = 1;
				break;
			}
			if ((r = unw_step(&c)) <= 0)
				break;
		}
	}
	walk_lock_release();
	*clean = r == 0;
	return n;
}

/* Does the calling thread hold a place in unw_backtrace's cache? */
bool mw_unwind_has_slot(void)
{
	return mw_tls.unw == UNW_SLOT;
}

/* The stack of the calling thread into ips (at most cap return addresses,
 * innermost first, the agent's own frames among them). The count, or < 0. */
int mw_unwind(uintptr_t *ips, int cap)
{
	return unw_slot() ? unw_backtrace((void **)ips, cap) : walk_cursor(ips, cap);
}

/* A fork's child: the other threads are gone, and with them their places. */
void mw_unwind_atfork_child(void)
{
	unw_slots_used = mw_tls.unw == UNW_SLOT;
	walk_lock = 0;
	walk_waiters = 0;
}
