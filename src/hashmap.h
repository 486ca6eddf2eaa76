/* hashmap.h: the CLI's one hash table, open addressing with linear probing:
 * entries of one fixed size are kept in the table itself, each beside 32
 * bits of its hash, so that a probe compares hashes and calls the caller's eq
 * only on a match; the table doubles when it is half full. And the hash functions
 * its users share. */
#ifndef MEMWATCH_HASHMAP_H
#define MEMWATCH_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap {
	unsigned char *slots;         /* each: 32 bits of the hash (0: empty), then
				       * the entry, at eoff */
	size_t stride;                /* bytes per slot */
	size_t eoff;                  /* 4, or 8 for entries of 8-byte multiples
				       * (they may hold 64-bit members) */
	size_t mask;                  /* slots - 1; 0 before the first entry */
	size_t n;                     /* entries */
	size_t esize;                 /* bytes per entry */
};

/* Does entry (in the table) hold key (as the caller's lookup gives it)? */
typedef bool hashmap_eq(const void *entry, const void *key);

/* An empty map of entries of esize bytes. */
void hashmap_init(struct hashmap *m, size_t esize);

/* Free the table (what its entries point to is the caller's to free first,
 * with hashmap_next); m is empty again. */
void hashmap_release(struct hashmap *m);

/* The entry of hash that eq says holds key, or NULL. */
static inline void *hashmap_find(const struct hashmap *m, uint64_t hash, hashmap_eq *eq,
				 const void *key);

/* The entry of hash that eq says holds key; if there is none, a new one, all
 * zeros, for the caller to fill (*added set). Pointers into the map stay good
 * until the next hashmap_put. */
static inline void *hashmap_put(struct hashmap *m, uint64_t hash, hashmap_eq *eq,
				const void *key, bool *added);

/* The entries in table order: the first after prev (NULL: the first), or NULL
 * at the end. */
void *hashmap_next(const struct hashmap *m, const void *prev);

/* A table of strings, each kept once (a copy), numbered in order of first
 * sight. */
struct strtab {
	char **s;                     /* by id */
	size_t n, cap;
	struct hashmap index;         /* uint32_t ids */
};

void strtab_init(struct strtab *t);
/* The id of s, a copy added if new. */
uint32_t strtab_id(struct strtab *t, const char *s);
/* Free the strings and the table; t is empty again. */
void strtab_release(struct strtab *t);

/* splitmix64's finalizer: a good spread for numbers (offsets, ids). */
static inline uint64_t hash_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

/* The bytes of s, and n bytes at p, hashed by FNV-1a's steps; the start value
 * is FNV's offset basis with its last digit lost, as the first copies of this
 * code had it: the flame graphs' colours derive from it, so it stays. */
#define HASH_FNV_START UINT64_C(1469598103934665603)
#define HASH_FNV_PRIME UINT64_C(1099511628211)

static inline uint64_t hash_str(const char *s)
{
	uint64_t h = HASH_FNV_START;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * HASH_FNV_PRIME;
	return h;
}

static inline uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = HASH_FNV_START;
	while (n--)
		h = (h ^ *b++) * HASH_FNV_PRIME;
	return h;
}

/* The rest is the inside of the table, in the header so that a lookup and
 * its caller's eq are compiled into the caller (they run once a frame). */

/* Double the table (or make the first), moving every entry. */
void hashmap_grow_(struct hashmap *m);

/* The hash as stored, 32 bits (the high ones folded into the low ones, for
 * FNV's low bits alone spread poorly); 0 marks an empty slot. */
static inline uint32_t hashmap_stored_(uint64_t hash)
{
	uint32_t h = (uint32_t)(hash ^ (hash >> 32));
	return h ? h : 1;
}

/* The slot of (stored hash h, key): the entry's, or the empty one where it
 * belongs. */
static inline uint32_t *hashmap_probe_(const struct hashmap *m, uint32_t h, hashmap_eq *eq,
				       const void *key)
{
	size_t i = h & m->mask;
	uint32_t *s;

	for (;; i = (i + 1) & m->mask) {
		s = (uint32_t *)(void *)(m->slots + i * m->stride);
		if (!*s || (*s == h && eq((unsigned char *)s + m->eoff, key)))
			return s;
	}
}

static inline void *hashmap_find(const struct hashmap *m, uint64_t hash, hashmap_eq *eq,
				 const void *key)
{
	uint32_t *s;

	if (!m->slots)
		return NULL;
	s = hashmap_probe_(m, hashmap_stored_(hash), eq, key);
	return *s ? (unsigned char *)s + m->eoff : NULL;
}

static inline void *hashmap_put(struct hashmap *m, uint64_t hash, hashmap_eq *eq,
				const void *key, bool *added)
{
	uint32_t h = hashmap_stored_(hash), *s;

	if (!m->slots || (m->n + 1) * 2 > m->mask + 1)
		hashmap_grow_(m);
	s = hashmap_probe_(m, h, eq, key);
	*added = !*s;
	if (*added) {
		*s = h;
		m->n++;
	}
	return (unsigned char *)s + m->eoff;
}

#endif
