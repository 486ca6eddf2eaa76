/* runtimes.c: the list of the language runtimes the agent reads, and the
 * core's calls of each moment to them (runtime.h). This is the one file that
 * names a runtime: adding one is a line in the table, besides its own files.
 * A static table rather than registration by constructors: the order is fixed
 * and visible here, nothing runs before the agent's own constructor, and no
 * registration can be missed when the link keeps an object out. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "agent.h"

extern const struct mw_runtime mw_python_runtime MW_HIDDEN;
extern const struct mw_runtime mw_js_runtime MW_HIDDEN;

const struct mw_runtime *const mw_runtimes[] = {
	&mw_python_runtime,
	&mw_js_runtime,
};
const size_t mw_nruntimes = sizeof mw_runtimes / sizeof mw_runtimes[0];

/* Call entry e (a void (*)(void)) of every runtime that has it, in order. */
#define EACH(e)                                                  \
	do {                                                     \
		for (size_t i_ = 0; i_ < mw_nruntimes; i_++)     \
			if (mw_runtimes[i_]->e)                  \
				mw_runtimes[i_]->e();            \
	} while (0)

void mw_runtimes_init(void)
{
	EACH(init);
}

void mw_runtimes_atfork_prepare(void)
{
	EACH(atfork_prepare);
}

/* The parent lets go in the reverse order of the prepare's taking. */
void mw_runtimes_atfork_parent(void)
{
	for (size_t i = mw_nruntimes; i-- > 0;)
		if (mw_runtimes[i]->atfork_parent)
			mw_runtimes[i]->atfork_parent();
}

void mw_runtimes_atfork_child(void)
{
	EACH(atfork_child);
}

void mw_runtimes_capture_resume(void)
{
	EACH(capture_resume);
}

void mw_runtimes_capture_start(void)
{
	EACH(capture_start);
}

void mw_runtimes_capture_stop(void)
{
	EACH(capture_stop);
}

int mw_runtimes_types(struct snapshot *s)
{
	for (size_t i = 0; i < mw_nruntimes; i++)
		if (mw_runtimes[i]->types && mw_runtimes[i]->types(s) < 0)
			return -1;
	return 0;
}

int mw_runtimes_snapshot(struct snapshot *s, uint64_t wait_ns)
{
	for (size_t i = 0; i < mw_nruntimes; i++)
		if (mw_runtimes[i]->snapshot && mw_runtimes[i]->snapshot(s, wait_ns) < 0)
			return -1;
	return 0;
}

int mw_runtimes_referrers(struct snapshot *s, uint64_t limit_ns, uint64_t max_objects)
{
	for (size_t i = 0; i < mw_nruntimes; i++)
		if (mw_runtimes[i]->referrers && mw_runtimes[i]->referrers(s, limit_ns, max_objects) < 0)
			return -1;
	return 0;
}

/* Append sep and src to buf (room len, holding n bytes), as much as fits.
 * The new length. */
static size_t append(char *buf, size_t len, size_t n, char sep, const char *src)
{
	size_t k = strlen(src);
	if (n + 1 >= len)
		return n;
	buf[n++] = sep;
	if (k > len - 1 - n)
		k = len - 1 - n;
	memcpy(buf + n, src, k);
	n += k;
	buf[n] = '\0';
	return n;
}

void mw_runtimes_status(char *buf, size_t len)
{
	char fields[256], why[8][256];
	size_t n = 0, i, nw = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (i = 0; i < mw_nruntimes; i++) {
		if (!mw_runtimes[i]->status)
			continue;
		fields[0] = '\0';
		why[nw][0] = '\0';
		mw_runtimes[i]->status(fields, sizeof fields, why[nw], sizeof why[nw]);
		n = append(buf, len, n, ' ', fields);
		if (nw + 1 < sizeof why / sizeof why[0])
			nw++;
	}
	for (i = 0; i < nw; i++)
		n = append(buf, len, n, i ? '\t' : ' ', why[i]);
}
