#include "hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_EMPTY = 0, SLOT_FULL = 1, SLOT_DELETED = 2 };

void hashmap_init(struct hashmap *m)
{
	memset(m, 0, sizeof(*m));
}

void hashmap_free(struct hashmap *m)
{
	free(m->keys);
	free(m->vals);
	free(m->state);
	hashmap_init(m);
}

static size_t slot_of(const struct hashmap *m, uint64_t key)
{
	return (size_t)hash64_mix(key) & (m->cap - 1);
}

/* Rehash into a table of twice the size, or the same size when most used
 * slots are tombstones (insert/delete churn). */
static int grow(struct hashmap *m)
{
	struct hashmap next;
	size_t i;

	hashmap_init(&next);
	next.cap = m->cap ? m->cap * 2 : 16;
	if (m->len * 4 < m->cap)
		next.cap = m->cap;
	next.keys = malloc(next.cap * sizeof(uint64_t));
	next.vals = malloc(next.cap * sizeof(uint64_t));
	next.state = calloc(next.cap, 1);
	if (!next.keys || !next.vals || !next.state) {
		hashmap_free(&next);
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++) {
		size_t s;

		if (m->state[i] != SLOT_FULL)
			continue;
		s = slot_of(&next, m->keys[i]);
		while (next.state[s] != SLOT_EMPTY)
			s = (s + 1) & (next.cap - 1);
		next.state[s] = SLOT_FULL;
		next.keys[s] = m->keys[i];
		next.vals[s] = m->vals[i];
		next.len++;
	}
	next.used = next.len;
	hashmap_free(m);
	*m = next;
	return 0;
}

/* The key's slot if present (*found), else the slot to insert into. */
static size_t find(const struct hashmap *m, uint64_t key, bool *found)
{
	size_t s = slot_of(m, key), tomb = SIZE_MAX;

	*found = false;
	for (;;) {
		if (m->state[s] == SLOT_EMPTY)
			return tomb != SIZE_MAX ? tomb : s;
		if (m->state[s] == SLOT_FULL && m->keys[s] == key) {
			*found = true;
			return s;
		}
		if (m->state[s] == SLOT_DELETED && tomb == SIZE_MAX)
			tomb = s;
		s = (s + 1) & (m->cap - 1);
	}
}

int hashmap_put(struct hashmap *m, uint64_t key, uint64_t val)
{
	bool found;
	size_t s;

	if ((m->used + 1) * 4 > m->cap * 3 && grow(m))
		return -ENOMEM;
	s = find(m, key, &found);
	if (!found) {
		if (m->state[s] == SLOT_EMPTY)
			m->used++;
		m->state[s] = SLOT_FULL;
		m->keys[s] = key;
		m->len++;
	}
	m->vals[s] = val;
	return 0;
}

bool hashmap_get(const struct hashmap *m, uint64_t key, uint64_t *val)
{
	bool found;
	size_t s;

	if (!m->cap)
		return false;
	s = find(m, key, &found);
	if (found && val)
		*val = m->vals[s];
	return found;
}

bool hashmap_del(struct hashmap *m, uint64_t key)
{
	bool found;
	size_t s;

	if (!m->cap)
		return false;
	s = find(m, key, &found);
	if (!found)
		return false;
	m->state[s] = SLOT_DELETED;
	m->len--;
	return true;
}

bool hashmap_next(const struct hashmap *m, size_t *iter, uint64_t *key, uint64_t *val)
{
	while (*iter < m->cap) {
		size_t s = (*iter)++;

		if (m->state[s] == SLOT_FULL) {
			if (key)
				*key = m->keys[s];
			if (val)
				*val = m->vals[s];
			return true;
		}
	}
	return false;
}

/* splitmix64 finalizer: cheap and well distributed. */
uint64_t hash64_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint64_t hash64_bytes(const void *data, size_t len, uint64_t seed)
{
	const uint8_t *p = data;
	uint64_t h = seed ^ 0x9e3779b97f4a7c15ULL ^ len;

	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		h = hash64_mix(h ^ w);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t w = 0;

		memcpy(&w, p, len);
		h = hash64_mix(h ^ w ^ 0xff);
	}
	return hash64_mix(h);
}

uint64_t hash64_str(const char *s)
{
	return hash64_bytes(s, strlen(s), 0);
}
