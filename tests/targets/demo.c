/* demo.c: the bundled demo workload: a small "service" that answers requests,
 * keeps a response cache that is never evicted (the leak), and churns through
 * short-lived buffers as real services do. It grows by about 6 MiB a second
 * and stops on its own after the given number of seconds (default 30). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct response {
	struct response *next;
	uint64_t key;
	size_t len;
	char body[];
};

#define BUCKETS 4096
static struct response *cache[BUCKETS];

/* Remember a response for later requests: nothing ever evicts it. */
static __attribute__((noinline)) void cache_store(uint64_t key, const char *body, size_t len)
{
	struct response *r = malloc(sizeof *r + len);
	if (!r)
		abort();
	r->key = key;
	r->len = len;
	memcpy(r->body, body, len);
	r->next = cache[key % BUCKETS];
	cache[key % BUCKETS] = r;
}

/* Build a response in a scratch buffer that lives only for this request. */
static __attribute__((noinline)) char *render(uint64_t key, size_t len)
{
	char *buf = malloc(len);
	if (!buf)
		abort();
	memset(buf, 'a' + (int)(key % 26), len);
	return buf;
}

/* Handle one request: render, maybe cache, and free the scratch buffer. */
static __attribute__((noinline)) void handle_request(uint64_t key)
{
	size_t len = 2048 + key % 4096;
	char *body = render(key, len);
	cache_store(key, body, len);
	free(body);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 30;
	double start = now();
	uint64_t key = 0;
	/* a steady working set, allocated once */
	char *steady = malloc(16 << 20);
	memset(steady, 1, 16 << 20);

	while (now() - start < seconds) {
		/* about 1500 requests (~6 MiB cached) a second, in 10 ms batches */
		for (int i = 0; i < 15; i++)
			handle_request(key++);
		usleep(10000);
	}
	printf("demo: served %llu requests\n", (unsigned long long)key);
	free(steady);
	return 0;
}
