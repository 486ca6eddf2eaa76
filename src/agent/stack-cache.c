/* stack-cache.c: the stacks a thread sampled, found again without unwinding.
 * With every allocation sampled, most samples of a program come from a few
 * places reached by a few paths, and unwinding each of them again (with
 * libunwind's frame cache, some 640 instructions for 7 frames) was the largest
 * part of the agent's cost. A thread keeps the stacks it sampled (64, in sets
 * of 4) keyed by the return address and the canonical frame address
 * (CFA) of the sampling function, and with each the place on the stack of
 * every return address it holds. A sample at the same key whose return
 * addresses all still stand in those places has that same stack: unwinding is
 * a function of the registers it starts from and of the words it reads, and
 * the words that decide each next frame are those return addresses at those
 * places (the key fixes the first frame's); a stack that differs anywhere
 * differs in one of them. The stack's interned id is kept with it, so a hit
 * also skips the hash and the lookup of the stack.
 *
 * Safety: a hit reads only words at the places an entry recorded, which lie
 * between its CFA and the outermost frame of the thread's own stack (the one
 * it started on, mapped for as long as it lives): an entry is made only from
 * a walk with libunwind's cursor that checked each return address at its
 * place, crossed no signal frame, stepped less than STEP_MAX at a time, and
 * ended at the thread's outermost frame, just below its thread control block
 * (just below __libc_stack_end for the main thread). A stack on another stack
 * (a signal's alternate stack, a coroutine's) is never cached, so a later hit
 * never reads memory that may have been unmapped since.
 *
 * Cost: an entry is made by the cursor's walk (under unwind.c's walk lock,
 * slower than unw_backtrace: some 40 000 instructions for CPython's 50
 * frames); a thread whose samples seldom hit (most stacks new) makes one in
 * 64 of its misses only, and so does a key whose last walk made no entry (a
 * stack deeper than an entry holds: most of CPython's misses at a rate of 1
 * were such walks, each followed by unw_backtrace all the same). Memory: a
 * table of about 40 KiB per thread that holds a place in unw_backtrace's
 * cache (unwind.c), mapped at its first miss, unmapped at its exit. */
#include "config.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "stack-cache.h"

#define SC_WAYS 4                         /* entries per key: paths at one depth */
#define SC_SETS 16
#define STEP_MAX ((uintptr_t)64 << 10)    /* one frame's size, at most */
#define BASE_MAX ((uintptr_t)1 << 20)     /* outermost frame to the thread's end */
#define WALK (SC_SLOTS + 16)              /* the walk's frames: ours below the key too */
#define SC_BARREN 16                      /* keys whose walk made no entry */
#define BARREN_USES 64                    /* misses at such a key before a walk again */

struct sc_table {
	uint32_t hits, misses;
	bool main;                 /* the main thread: its stack ends at __libc_stack_end */
	uint8_t next[SC_SETS];     /* the way a new entry of the set takes */
	uint8_t barren_next;
	struct mw_sc_entry e[SC_SETS][SC_WAYS];
	/* keys whose last walk made no entry (a stack deeper than an entry
	 * holds, mostly): their misses unwind the quick way, and walk again
	 * once in BARREN_USES */
	struct {
		uintptr_t ra, cfa;
		uint32_t left;
	} barren[SC_BARREN];
};

uint32_t mw_sc_gen = 1;
extern void *__libc_stack_end;
static pthread_key_t sc_key;
static bool sc_key_ok;

static void sc_free(void *t)
{
	/* (the key's value is already NULL, and the thread's own pointer goes
	 * too: a sample from a later destructor of this thread finds no table;
	 * destructors run on the exiting thread) */
	if (mw_tls.sc == t)
		mw_tls.sc = NULL;
	mw_unmap(t, sizeof(struct sc_table));
}

void mw_sc_init(void)
{
	if (!sc_key_ok && pthread_key_create(&sc_key, sc_free) == 0)
		sc_key_ok = true;
}

/* The set of key (ra, cfa). The key fixes the hook and the depth of the stack,
 * not the caller: paths that allocate at one depth (a loop calling f, then g)
 * share it, and take its ways. */
static size_t set_of(uintptr_t ra, uintptr_t cfa)
{
	return (size_t)(((ra ^ (cfa << 7)) * 0x9E3779B97F4A7C15ull) >> 60) & (SC_SETS - 1);
}

struct mw_sc_entry *mw_sc_find(uintptr_t ra, uintptr_t cfa)
{
	struct sc_table *t;
	struct mw_sc_entry *e;
	const char *at = (const char *)(cfa - 8);
	unsigned k, w;

	/* (the key's value, kept in the thread's own block too: read there
	 * without a call) */
	if (!(t = mw_tls.sc))
		return NULL;
	e = t->e[set_of(ra, cfa)];
	for (w = 0; w < SC_WAYS; w++, e++) {
		unsigned n = e->n;
		uintptr_t d = 0;
		if (e->ra != ra || e->cfa != cfa)
			continue;
		/* four places at a time, their differences or'ed, one branch
		 * (every place lies on the thread's stack, read past a
		 * difference or not) */
#define SC_AT(k) (*(const volatile uintptr_t *)(at + e->off[k]) ^ e->ip[k])
		for (k = 1; k + 4 <= n; k += 4)
			if ((d = SC_AT(k) | SC_AT(k + 1) | SC_AT(k + 2) | SC_AT(k + 3)))
				break;
		for (; !d && k < n; k++)
			d = SC_AT(k);
#undef SC_AT
		if (!d) {
			t->hits++;
			return e;
		}
	}
	t->misses++;
	if (t->misses >= (1u << 30)) {
		t->misses >>= 1;
		t->hits >>= 1;
	}
	return NULL;
}

/* The end of the calling thread's own stack: its outermost frame lies just
 * below it. */
static uintptr_t stack_end(const struct sc_table *t)
{
	uintptr_t tp;
	if (t->main)
		return (uintptr_t)__libc_stack_end;
	/* glibc's thread control block, which starts with its own address,
	 * stands at the top of the thread's stack block */
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

static struct sc_table *table(void)
{
	struct sc_table *t;
	if (!sc_key_ok)
		return NULL;
	if ((t = pthread_getspecific(sc_key))) {
		mw_tls.sc = t;
		return t;
	}
	if (!mw_unwind_has_slot())
		return NULL;
	if (!(t = mw_map(sizeof *t)))
		return NULL;
	t->main = syscall(SYS_gettid) == getpid();
	if (pthread_setspecific(sc_key, t) != 0) {
		mw_unmap(t, sizeof *t);
		return NULL;
	}
	mw_tls.sc = t;
	return t;
}

/* An entry from a clean walk (wips, wsps: n frames), if it qualifies. */
static struct mw_sc_entry *make_entry(struct sc_table *t, const uintptr_t *wips,
				      const uintptr_t *wsps, int n, uintptr_t ra, uintptr_t cfa)
{
	struct mw_sc_entry *e;
	uintptr_t end, prev = cfa - 8;
	int j, k, m;

	for (j = 0; j < n; j++)
		if (wips[j] == ra && wsps[j] == cfa)
			break;
	m = n - j;
	if (j == n || m > SC_SLOTS)
		return NULL;
	for (k = j; k < n; k++) {
		uintptr_t at = wsps[k] - 8;
		if (at < prev || at - prev > STEP_MAX || *(const uintptr_t *)at != wips[k])
			return NULL;
		prev = at;
	}
	end = stack_end(t);
	if (prev >= end || end - prev > BASE_MAX)
		return NULL;
	{
		size_t set = set_of(ra, cfa);
		unsigned w;
		for (w = 0; w < SC_WAYS && t->e[set][w].ra; w++)
			;
		if (w == SC_WAYS)
			w = t->next[set]++ % SC_WAYS;
		e = &t->e[set][w];
	}
	e->ra = 0;
	for (k = 0; k < m; k++) {
		e->off[k] = (uint32_t)(wsps[j + k] - cfa);
		e->ip[k] = wips[j + k];
	}
	e->n = (uint16_t)m;
	for (e->skip = 0; e->skip < m && mw_in_agent(e->ip[e->skip]); e->skip++)
		;
	e->gen = e->mgen = 0;
	e->cfa = cfa;
	e->ra = ra;
	return e;
}

/* Is (ra, cfa) a key whose walk made no entry lately? Counts the use. */
static bool barren(struct sc_table *t, uintptr_t ra, uintptr_t cfa)
{
	unsigned i;
	for (i = 0; i < SC_BARREN; i++)
		if (t->barren[i].ra == ra && t->barren[i].cfa == cfa && t->barren[i].left) {
			t->barren[i].left--;
			return true;
		}
	return false;
}

static void barren_add(struct sc_table *t, uintptr_t ra, uintptr_t cfa)
{
	unsigned i = t->barren_next++ % SC_BARREN;
	t->barren[i].ra = ra;
	t->barren[i].cfa = cfa;
	t->barren[i].left = BARREN_USES;
}

int mw_sc_unwind(uintptr_t *ips, int cap, uintptr_t ra, uintptr_t cfa, struct mw_sc_entry **e)
{
	struct sc_table *t = table();
	uintptr_t wips[WALK], wsps[WALK];
	bool clean;
	int n, i;

	*e = NULL;
	/* a thread whose samples seldom hit walks for one miss in 64; a key
	 * whose walk made no entry (CPython's deep C stacks: more than
	 * SC_SLOTS frames) as often */
	if (!t || (t->misses >= 64 && t->hits < t->misses / 4 && (t->misses & 63)) ||
	    barren(t, ra, cfa))
		return mw_unwind(ips, cap);
	n = mw_unwind_walk_sp(wips, wsps, WALK, &clean);
	if (!clean) {
		barren_add(t, ra, cfa);
		return mw_unwind(ips, cap);
	}
	if (!(*e = make_entry(t, wips, wsps, n, ra, cfa)))
		barren_add(t, ra, cfa);
	if (n > cap)
		n = cap;
	for (i = 0; i < n; i++)
		ips[i] = wips[i];
	return n;
}
