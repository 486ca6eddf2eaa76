/* trend-read.c: the snapshots of a trend, read in order by a second thread a
 * few ahead of their use, by two threads. Decoding a snapshot of 100 000
 * stacks (and hashing its stacks) takes longer than keying them to rows, so
 * the reading is shared and overlaps the keying; and a trend of ten such
 * snapshots holds four or five of them at a time, not ten. */
#include "config.h"
#include "snapshot.h"
#include "trend-read.h"
#include "util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct trend_reader {
	pthread_mutex_t lock;
	pthread_cond_t cond;          /* a snapshot read, or one taken, or stop */
	pthread_t th[2];
	size_t nthreads;
	bool stop;
	size_t n, ahead;
	size_t next;                  /* the next snapshot a thread is to read */
	size_t taken;                 /* snapshots taken so far (in order) */
	const char *const *paths;
	trend_reader_read *read;
	void *arg;
	void (*drop)(void *extra);
	struct snapshot **s;
	void **extra;
	char **cause;
	bool *ready;
};

/* Snapshot i read, as the caller asked. */
static struct snapshot *read_one(struct trend_reader *tr, size_t i, void **extra, char **cause)
{
	*extra = NULL;
	if (tr->read)
		return tr->read(tr->arg, i, tr->paths[i], extra, cause);
	return snapshot_read(tr->paths[i], cause);
}

/* A reading thread: it takes the next snapshot to read, once fewer than
 * ahead are read and not taken before it. */
static void *read_ahead(void *arg)
{
	struct trend_reader *tr = arg;

	for (;;) {
		struct snapshot *s;
		char *cause = NULL;
		void *extra;
		size_t i;

		pthread_mutex_lock(&tr->lock);
		while (!tr->stop && tr->next < tr->n && tr->next >= tr->taken + tr->ahead)
			pthread_cond_wait(&tr->cond, &tr->lock);
		if (tr->stop || tr->next >= tr->n) {
			pthread_mutex_unlock(&tr->lock);
			return NULL;
		}
		i = tr->next++;
		pthread_mutex_unlock(&tr->lock);
		s = read_one(tr, i, &extra, &cause);
		pthread_mutex_lock(&tr->lock);
		tr->s[i] = s;
		tr->extra[i] = extra;
		tr->cause[i] = cause;
		tr->ready[i] = true;
		pthread_cond_broadcast(&tr->cond);
		pthread_mutex_unlock(&tr->lock);
	}
}

struct trend_reader *trend_reader_start(const char *const *paths, size_t n, size_t ahead,
					trend_reader_read *read, void *arg, void (*drop)(void *extra))
{
	struct trend_reader *tr = xcalloc(1, sizeof *tr);

	tr->read = read;
	tr->drop = drop ? drop : free;
	tr->arg = arg;
	tr->extra = xcalloc(n ? n : 1, sizeof *tr->extra);
	tr->n = n;
	tr->ahead = ahead ? ahead : 1;
	tr->paths = paths;
	tr->s = xcalloc(n ? n : 1, sizeof *tr->s);
	tr->cause = xcalloc(n ? n : 1, sizeof *tr->cause);
	tr->ready = xcalloc(n ? n : 1, sizeof *tr->ready);
	pthread_mutex_init(&tr->lock, NULL);
	pthread_cond_init(&tr->cond, NULL);
	/* two: decoding a snapshot takes longer than keying it; without a
	 * thread, each is read when it is taken */
	while (tr->nthreads < 2 && pthread_create(&tr->th[tr->nthreads], NULL, read_ahead, tr) == 0)
		tr->nthreads++;
	return tr;
}

struct snapshot *trend_reader_take(struct trend_reader *tr, size_t i, void **extra, char **cause)
{
	struct snapshot *s;

	*cause = NULL;
	if (!tr->nthreads) {
		tr->taken = i + 1;
		return read_one(tr, i, extra, cause);
	}
	pthread_mutex_lock(&tr->lock);
	while (!tr->ready[i])
		pthread_cond_wait(&tr->cond, &tr->lock);
	s = tr->s[i];
	*extra = tr->extra[i];
	*cause = tr->cause[i];
	tr->extra[i] = NULL;
	tr->s[i] = NULL;
	tr->cause[i] = NULL;
	tr->taken = i + 1;
	pthread_cond_broadcast(&tr->cond);
	pthread_mutex_unlock(&tr->lock);
	return s;
}

void trend_reader_stop(struct trend_reader *tr)
{
	if (!tr)
		return;
	pthread_mutex_lock(&tr->lock);
	tr->stop = true;
	pthread_cond_broadcast(&tr->cond);
	pthread_mutex_unlock(&tr->lock);
	for (size_t k = 0; k < tr->nthreads; k++)
		pthread_join(tr->th[k], NULL);
	for (size_t i = 0; i < tr->n; i++) {
		snapshot_free(tr->s[i]);
		if (tr->extra[i])
			tr->drop(tr->extra[i]);
		free(tr->cause[i]);
	}
	pthread_cond_destroy(&tr->cond);
	pthread_mutex_destroy(&tr->lock);
	free(tr->s);
	free(tr->extra);
	free(tr->cause);
	free(tr->ready);
	free(tr);
}
