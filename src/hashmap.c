/* hashmap.c: the CLI's one hash table (see hashmap.h). */
#include "config.h"
#include "hashmap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define FIRST_SLOTS 1024

static uint32_t *slot_at(const struct hashmap *m, size_t i)
{
	return (uint32_t *)(void *)(m->slots + i * m->stride);
}

void hashmap_init(struct hashmap *m, size_t esize)
{
	memset(m, 0, sizeof *m);
	m->esize = esize;
	m->eoff = esize % 8 == 0 ? 8 : 4;
	m->stride = (m->eoff + esize + m->eoff - 1) / m->eoff * m->eoff;
}

void hashmap_release(struct hashmap *m)
{
	free(m->slots);
	hashmap_init(m, m->esize);
}

void hashmap_grow_(struct hashmap *m)
{
	size_t nold = m->slots ? m->mask + 1 : 0, nnew = nold ? nold * 2 : FIRST_SLOTS;
	unsigned char *old = m->slots;

	m->slots = xcalloc(nnew, m->stride);
	m->mask = nnew - 1;
	for (size_t j = 0; j < nold; j++) {
		const uint32_t *s = (const uint32_t *)(const void *)(old + j * m->stride);
		size_t i;
		if (!*s)
			continue;
		for (i = *s & m->mask; *slot_at(m, i); i = (i + 1) & m->mask)
			;
		memcpy(slot_at(m, i), s, m->stride);
	}
	free(old);
}

void *hashmap_next(const struct hashmap *m, const void *prev)
{
	size_t i = prev ? (size_t)((const unsigned char *)prev - m->eoff - m->slots) / m->stride + 1
			: 0;

	for (; m->slots && i <= m->mask; i++)
		if (*slot_at(m, i))
			return (unsigned char *)slot_at(m, i) + m->eoff;
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
