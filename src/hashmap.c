/* hashmap.c: the CLI's one hash table (see hashmap.h). */
#include "config.h"
#include "hashmap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define FIRST_SLOTS 1024

/* The hash as stored: 0 marks an empty slot. */
static uint64_t stored(uint64_t hash)
{
	return hash ? hash : 1;
}

/* The first slot to probe for h: FNV's low bits are mixed with its high ones. */
static size_t home(const struct hashmap *m, uint64_t h)
{
	return (size_t)(h ^ (h >> 29)) & m->mask;
}

static uint64_t *slot_at(const struct hashmap *m, size_t i)
{
	return (uint64_t *)(void *)(m->slots + i * m->stride);
}

void hashmap_init(struct hashmap *m, size_t esize)
{
	memset(m, 0, sizeof *m);
	m->esize = esize;
	m->stride = sizeof(uint64_t) + (esize + 7) / 8 * 8;
}

void hashmap_release(struct hashmap *m)
{
	free(m->slots);
	hashmap_init(m, m->esize);
}

/* Double the table (or make the first), moving every entry. */
static void grow(struct hashmap *m)
{
	size_t nold = m->slots ? m->mask + 1 : 0, nnew = nold ? nold * 2 : FIRST_SLOTS;
	unsigned char *old = m->slots;

	m->slots = xcalloc(nnew, m->stride);
	m->mask = nnew - 1;
	for (size_t j = 0; j < nold; j++) {
		const uint64_t *s = (const uint64_t *)(const void *)(old + j * m->stride);
		size_t i;
		if (!*s)
			continue;
		for (i = home(m, *s); *slot_at(m, i); i = (i + 1) & m->mask)
			;
		memcpy(slot_at(m, i), s, m->stride);
	}
	free(old);
}

/* The slot of (hash, key): the entry's, or the empty one where it belongs. */
static uint64_t *probe(const struct hashmap *m, uint64_t h, hashmap_eq *eq, const void *key)
{
	uint64_t *s;
	size_t i;

	for (i = home(m, h); *(s = slot_at(m, i)); i = (i + 1) & m->mask)
		if (*s == h && eq(s + 1, key))
			break;
	return s;
}

void *hashmap_find(const struct hashmap *m, uint64_t hash, hashmap_eq *eq, const void *key)
{
	uint64_t *s;

	if (!m->slots)
		return NULL;
	s = probe(m, stored(hash), eq, key);
	return *s ? s + 1 : NULL;
}

void *hashmap_put(struct hashmap *m, uint64_t hash, hashmap_eq *eq, const void *key, bool *added)
{
	uint64_t h = stored(hash), *s;

	if (!m->slots || (m->n + 1) * 2 > m->mask + 1)
		grow(m);
	s = probe(m, h, eq, key);
	*added = !*s;
	if (*added) {
		*s = h;
		m->n++;
	}
	return s + 1;
}

void *hashmap_next(const struct hashmap *m, const void *prev)
{
	size_t i = prev ? (size_t)((const unsigned char *)prev - sizeof(uint64_t) - m->slots) /
				  m->stride + 1
			: 0;

	for (; m->slots && i <= m->mask; i++)
		if (*slot_at(m, i))
			return slot_at(m, i) + 1;
	return NULL;
}

void strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof *t);
	hashmap_init(&t->index, sizeof(uint32_t));
}

/* What the index of a strtab is asked. */
struct str_query {
	const struct strtab *t;
	const char *s;
};

static bool str_eq(const void *entry, const void *key)
{
	const struct str_query *q = key;
	return strcmp(q->t->s[*(const uint32_t *)entry], q->s) == 0;
}

uint32_t strtab_id(struct strtab *t, const char *s)
{
	struct str_query q = { t, s };
	uint32_t *e;
	bool added;

	e = hashmap_put(&t->index, hash_str(s), str_eq, &q, &added);
	if (!added)
		return *e;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 256;
		t->s = xrealloc(t->s, t->cap * sizeof *t->s);
	}
	t->s[t->n] = xstrdup(s);
	*e = (uint32_t)t->n;
	return (uint32_t)t->n++;
}

void strtab_release(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	hashmap_release(&t->index);
	strtab_init(t);
}

uint64_t hash_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = UINT64_C(1469598103934665603);

	while (n--) {
		h ^= *b++;
		h *= UINT64_C(1099511628211);
	}
	return h;
}

uint64_t hash_str(const char *s)
{
	return hash_bytes(s, strlen(s));
}
