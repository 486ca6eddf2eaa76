/* capture.c: the agent's capture state: starting and stopping capture (the
 * control thread asks, or memwatch_agent_start with capture=now), its epochs,
 * and a forked child's capture. It drives the hooks (hooks.c), the sampler and
 * its tables (heap.c) and the runtimes (runtime.h); server.c and agent.c
 * call it. */
#include "config.h"

#include "agent.h"

static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static int last_epoch;

/* Empty the live-sample table, the stacks and the mmap hooks' table of
 * sampled mappings, no hook touching the latter meanwhile. */
static void reset_tables(void)
{
	mw_tls.guard++;
	mw_maps_reset_begin();
	mw_heap_reset();
	mw_maps_reset_end();
	mw_tls.guard--;
}

/* A new capture epoch, never 0 (0 means off). */
static int next_epoch(void)
{
	last_epoch = last_epoch >= INT32_MAX - 1 ? 1 : last_epoch + 1;
	return last_epoch;
}

/* Start capture (see agent.h). */
int mw_capture_start(uint64_t rate, unsigned depth, uint64_t max_stacks)
{
	if (mw_fork_tainted)
		return -1;
	mw_tls.guard++;
	pthread_mutex_lock(&capture_lock);
	if (!__atomic_load_n(&mw_hot.capturing, __ATOMIC_ACQUIRE)) {
		mw_heap_configure(rate, depth, max_stacks);
		reset_tables();
		mw_capture_start_ns = mw_now_ns();
		mw_hooks_install(true);
		__atomic_store_n(&mw_hot.capturing, next_epoch(), __ATOMIC_RELEASE);
		mw_runtimes_capture_start();
	}
	pthread_mutex_unlock(&capture_lock);
	mw_tls.guard--;
	return 0;
}

/* Stop capture (see agent.h). */
void mw_capture_stop(bool remove_hooks)
{
	mw_tls.guard++;
	pthread_mutex_lock(&capture_lock);
	__atomic_store_n(&mw_hot.capturing, 0, __ATOMIC_RELEASE);
	mw_runtimes_capture_stop();
	reset_tables();
	mw_capture_start_ns = 0;
	if (remove_hooks)
		mw_hooks_remove();
	pthread_mutex_unlock(&capture_lock);
	mw_tls.guard--;
}

/* The child of a fork (see agent.c's atfork_child). */
bool mw_capture_atfork_child(bool go_on)
{
	pthread_mutex_init(&capture_lock, NULL);
	__atomic_store_n(&mw_hot.capturing, 0, __ATOMIC_RELEASE);
	if (!go_on)
		return false;
	reset_tables();
	mw_capture_start_ns = mw_now_ns();
	__atomic_store_n(&mw_hot.capturing, next_epoch(), __ATOMIC_RELEASE);
	return true;
}
