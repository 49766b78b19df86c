/* hashmap: open-addressing map from any 64-bit key to a 64-bit value
 * (often a pointer or an index).  Callers hash their own composite
 * keys with hash64_*() and keep the full key beside the value when a
 * collision would matter. */
#ifndef PROFD_HASHMAP_H
#define PROFD_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap {
	uint64_t *keys;
	uint64_t *vals;
	uint8_t *state; /* SLOT_EMPTY, SLOT_FULL or SLOT_DELETED */
	size_t cap; /* power of two */
	size_t len;
	size_t used; /* len + tombstones */
};

void hashmap_init(struct hashmap *m);
void hashmap_free(struct hashmap *m);
/* 0 or -ENOMEM. */
int hashmap_put(struct hashmap *m, uint64_t key, uint64_t val);
bool hashmap_get(const struct hashmap *m, uint64_t key, uint64_t *val);
bool hashmap_del(struct hashmap *m, uint64_t key);
/* Iterate: for (size_t i = 0; hashmap_next(m, &i, &k, &v);) */
bool hashmap_next(const struct hashmap *m, size_t *iter, uint64_t *key, uint64_t *val);

uint64_t hash64_mix(uint64_t x);
uint64_t hash64_bytes(const void *data, size_t len, uint64_t seed);
uint64_t hash64_str(const char *s);

#endif
