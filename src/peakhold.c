/* peakhold.c: the peak snapshot held in memory until it is worth a file (see
 * peakhold.h). */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "peakhold.h"
#include "util.h"

int peak_hold_set(struct peak_hold *h, const struct snapshot *s, double t, uint64_t live,
		  const char *tag, char **cause)
{
	unsigned char *buf;
	size_t len;

	peak_hold_release(h);
	if (snapshot_encode(s, &buf, &len) < 0) {
		*cause = xasprintf("cannot keep the peak snapshot: %s",
				   errno == EINVAL ? "the snapshot is inconsistent" : strerror(errno));
		return -1;
	}
	h->buf = buf;
	h->len = len;
	h->t = t;
	h->live = live;
	h->nstacks = s->nstacks;
	h->tag = xstrdup(tag ? tag : "");
	return 0;
}

int peak_hold_write(struct peak_hold *h, const char *path, bool force, struct runlog *log,
		    double now, int pid, char **cause)
{
	char *epath;
	int ret = -1;

	if (!h->buf) {
		*cause = xasprintf("no peak snapshot is held for '%s'", path);
		return -1;
	}
	if (snapshot_write_bytes(h->buf, h->len, path, force, cause) == 0) {
		epath = runlog_encode(path);
		runlog_event(log, now, pid, "peak-snapshot", "path=%s live=%llu stacks=%zu peak_s=%.3f%s",
			     epath, (unsigned long long)h->live, h->nstacks, h->t, h->tag);
		free(epath);
		ret = 0;
	}
	peak_hold_release(h);
	return ret;
}

void peak_hold_release(struct peak_hold *h)
{
	free(h->buf);
	free(h->tag);
	*h = (struct peak_hold){ 0 };
}

uint64_t peak_margin(uint64_t peak)
{
	return peak / 10 > ((uint64_t)8 << 20) ? peak / 10 : ((uint64_t)8 << 20);
}

bool peak_fell(uint64_t live, uint64_t peak)
{
	return live < peak && peak - live > peak_margin(peak);
}
