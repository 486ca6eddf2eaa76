/* test_hashmap.c: unit tests for the CLI's hash table: entries found again
 * across growth, colliding and zero hashes, iteration, release; the string
 * table built on it; the hash functions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hashmap.h"

struct pair {
	uint32_t key, value;
};

static bool pair_eq(const void *entry, const void *key)
{
	return ((const struct pair *)entry)->key == *(const uint32_t *)key;
}

/* Many entries, through several doublings, each found with its value. */
static void test_grow(void **state)
{
	struct hashmap m;
	bool added;
	(void)state;

	hashmap_init(&m, sizeof(struct pair));
	assert_null(hashmap_find(&m, 1, pair_eq, &(uint32_t){ 1 }));
	for (uint32_t k = 0; k < 20000; k++) {
		struct pair *p = hashmap_put(&m, hash_mix64(k), pair_eq, &k, &added);
		assert_true(added);
		assert_int_equal(p->key, 0);   /* a new entry is all zeros */
		p->key = k;
		p->value = k * 3;
	}
	assert_int_equal(m.n, 20000);
	for (uint32_t k = 0; k < 20000; k++) {
		struct pair *p = hashmap_put(&m, hash_mix64(k), pair_eq, &k, &added);
		assert_false(added);
		assert_int_equal(p->value, k * 3);
		assert_ptr_equal(hashmap_find(&m, hash_mix64(k), pair_eq, &k), p);
	}
	assert_int_equal(m.n, 20000);
	for (uint32_t k = 20000; k < 20100; k++)
		assert_null(hashmap_find(&m, hash_mix64(k), pair_eq, &k));
	hashmap_release(&m);
	assert_int_equal(m.n, 0);
}

/* Every hash the same (0 too): eq alone tells the entries apart. */
static void test_collisions(void **state)
{
	struct hashmap m;
	bool added;
	(void)state;

	hashmap_init(&m, sizeof(struct pair));
	for (uint32_t k = 1; k <= 300; k++) {
		struct pair *p = hashmap_put(&m, 0, pair_eq, &k, &added);
		assert_true(added);
		p->key = k;
	}
	for (uint32_t k = 1; k <= 300; k++) {
		struct pair *p = hashmap_find(&m, 0, pair_eq, &k);
		assert_non_null(p);
		assert_int_equal(p->key, k);
	}
	hashmap_release(&m);
}

/* hashmap_next visits every entry once. */
static void test_iterate(void **state)
{
	struct hashmap m;
	bool added, seen[1000] = { false };
	size_t n = 0;
	(void)state;

	hashmap_init(&m, sizeof(struct pair));
	assert_null(hashmap_next(&m, NULL));
	for (uint32_t k = 0; k < 1000; k++)
		((struct pair *)hashmap_put(&m, hash_mix64(k), pair_eq, &k, &added))->key = k;
	for (struct pair *p = hashmap_next(&m, NULL); p; p = hashmap_next(&m, p)) {
		assert_true(p->key < 1000);
		assert_false(seen[p->key]);
		seen[p->key] = true;
		n++;
	}
	assert_int_equal(n, 1000);
	hashmap_release(&m);
}

/* A strtab numbers strings in order of first sight and keeps one copy. */
static void test_strtab(void **state)
{
	struct strtab t;
	char buf[16];
	(void)state;

	strtab_init(&t);
	assert_int_equal(strtab_id(&t, ""), 0);
	assert_int_equal(strtab_id(&t, "malloc"), 1);
	assert_int_equal(strtab_id(&t, "free"), 2);
	strcpy(buf, "malloc");
	assert_int_equal(strtab_id(&t, buf), 1);
	assert_true(t.s[1] != buf);
	assert_string_equal(t.s[2], "free");
	for (int i = 0; i < 5000; i++) {
		snprintf(buf, sizeof buf, "s%d", i);
		assert_int_equal(strtab_id(&t, buf), (uint32_t)i + 3);
	}
	assert_int_equal(strtab_id(&t, "s4999"), 5002);
	assert_int_equal(t.n, 5003);
	strtab_release(&t);
	assert_int_equal(t.n, 0);
}

/* The string hash: FNV-1a's steps from memwatch's own start value (see
 * hashmap.h), which the flame graphs' colours come from and so must not
 * change; the same for a string and its bytes. */
static void test_hashes(void **state)
{
	(void)state;
	assert_true(hash_str("") == UINT64_C(1469598103934665603));
	assert_true(hash_str("a") == ((UINT64_C(1469598103934665603) ^ 'a') * UINT64_C(1099511628211)));
	assert_true(hash_str("foobar") == UINT64_C(0x88fad7c0a8ff07f2));
	assert_true(hash_bytes("foobar", 6) == hash_str("foobar"));
	assert_true(hash_mix64(1) != hash_mix64(2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_collisions),
		cmocka_unit_test(test_iterate),
		cmocka_unit_test(test_strtab),
		cmocka_unit_test(test_hashes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
