/* story.c: the memory story of a process from /proc alone (see story.h): what
 * a watch can still say when no allocation of the process was sampled. */
#include "config.h"

#include "story.h"
#include "util.h"

void rss_story_add(struct rss_story *st, double t, const struct mem_sample *s)
{
	uint64_t rss = s->rss * 1024;

	if (!st->seen) {
		st->seen = true;
		st->t0 = t;
		st->first = rss;
	}
	st->t1 = t;
	st->last = rss;
	if (rss > st->peak)
		st->peak = rss;
	st->anon = s->anon * 1024;
	st->file = s->file * 1024;
	st->shmem = s->shmem * 1024;
	st->swap = s->swap * 1024;
}

void rss_story_print(FILE *f, int pid, const char *why, const struct rss_story *st)
{
	char a[32], b[32], d[32], p[32], an[32], fi[32], sh[32], sw[32];
	int64_t delta;

	if (!st->seen)
		return;
	delta = (int64_t)(st->last - st->first);
	fmt_bytes(a, sizeof a, (double)st->first);
	fmt_bytes(b, sizeof b, (double)st->last);
	fmt_bytes(d, sizeof d, (double)(delta < 0 ? -delta : delta));
	fmt_bytes(p, sizeof p, (double)st->peak);
	fmt_bytes(an, sizeof an, (double)st->anon);
	fmt_bytes(fi, sizeof fi, (double)st->file);
	fmt_bytes(sh, sizeof sh, (double)st->shmem);
	fmt_bytes(sw, sizeof sw, (double)st->swap);
	fprintf(f, "\nmemwatch: pid %d: its allocations were not sampled (%s); from /proc: "
		"RSS %s -> %s (%c%s) over %.1f s, peak %s; at the end anon %s, file %s, shmem %s, swap %s\n",
		pid, why, a, b, delta < 0 ? '-' : '+', d, st->t1 - st->t0, p, an, fi, sh, sw);
}
