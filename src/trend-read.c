/* trend-read.c: the snapshots of a trend, read in order by a second thread a
 * few ahead of their use. Decoding a snapshot of 100 000 stacks takes about
 * as long as keying its stacks to rows, so the two overlap; and a trend of ten
 * such snapshots holds three or four of them at a time, not ten. */
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
	pthread_t th;
	bool threaded;
	bool stop;
	size_t n, ahead;
	size_t taken;                 /* snapshots taken so far (in order) */
	const char *const *paths;
	struct snapshot **s;
	char **cause;
	bool *ready;
};

static void *read_ahead(void *arg)
{
	struct trend_reader *tr = arg;

	for (size_t i = 0; i < tr->n; i++) {
		struct snapshot *s;
		char *cause = NULL;

		pthread_mutex_lock(&tr->lock);
		while (!tr->stop && i >= tr->taken + tr->ahead)
			pthread_cond_wait(&tr->cond, &tr->lock);
		if (tr->stop) {
			pthread_mutex_unlock(&tr->lock);
			break;
		}
		pthread_mutex_unlock(&tr->lock);
		s = snapshot_read(tr->paths[i], &cause);
		pthread_mutex_lock(&tr->lock);
		tr->s[i] = s;
		tr->cause[i] = cause;
		tr->ready[i] = true;
		pthread_cond_broadcast(&tr->cond);
		pthread_mutex_unlock(&tr->lock);
	}
	return NULL;
}

struct trend_reader *trend_reader_start(const char *const *paths, size_t n, size_t ahead)
{
	struct trend_reader *tr = xcalloc(1, sizeof *tr);

	tr->n = n;
	tr->ahead = ahead ? ahead : 1;
	tr->paths = paths;
	tr->s = xcalloc(n ? n : 1, sizeof *tr->s);
	tr->cause = xcalloc(n ? n : 1, sizeof *tr->cause);
	tr->ready = xcalloc(n ? n : 1, sizeof *tr->ready);
	pthread_mutex_init(&tr->lock, NULL);
	pthread_cond_init(&tr->cond, NULL);
	/* without a thread, each is read when it is taken */
	tr->threaded = pthread_create(&tr->th, NULL, read_ahead, tr) == 0;
	return tr;
}

struct snapshot *trend_reader_take(struct trend_reader *tr, size_t i, char **cause)
{
	struct snapshot *s;

	*cause = NULL;
	if (!tr->threaded) {
		tr->taken = i + 1;
		return snapshot_read(tr->paths[i], cause);
	}
	pthread_mutex_lock(&tr->lock);
	while (!tr->ready[i])
		pthread_cond_wait(&tr->cond, &tr->lock);
	s = tr->s[i];
	*cause = tr->cause[i];
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
	if (tr->threaded) {
		pthread_mutex_lock(&tr->lock);
		tr->stop = true;
		pthread_cond_broadcast(&tr->cond);
		pthread_mutex_unlock(&tr->lock);
		pthread_join(tr->th, NULL);
	}
	for (size_t i = 0; i < tr->n; i++) {
		snapshot_free(tr->s[i]);
		free(tr->cause[i]);
	}
	pthread_cond_destroy(&tr->cond);
	pthread_mutex_destroy(&tr->lock);
	free(tr->s);
	free(tr->cause);
	free(tr->ready);
	free(tr);
}
