/* gpu_ktab.c: a process's kernel handles -> what names them.  Two maps
 * keyed by the handle: its value and its owner.  Unloads are rare (a
 * module per compiled graph, not per launch), so dropping an owner walks
 * the table instead of keeping a second index. */
#include <errno.h>
#include <stdlib.h>

#include "gpu.h"
#include "hashmap.h"

struct gpu_ktab {
	struct hashmap value; /* handle -> value */
	struct hashmap owner; /* handle -> owner */
	size_t cap;
	struct gpu_ktab_counts counts;
};

static void count(uint64_t *c, int64_t by)
{
	if (c)
		*c += (uint64_t)by;
}

struct gpu_ktab *gpu_ktab_new(size_t cap, struct gpu_ktab_counts counts)
{
	struct gpu_ktab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	hashmap_init(&t->value);
	hashmap_init(&t->owner);
	t->cap = cap;
	t->counts = counts;
	return t;
}

void gpu_ktab_free(struct gpu_ktab *t)
{
	if (!t)
		return;
	count(t->counts.live, -(int64_t)t->value.len);
	hashmap_free(&t->value);
	hashmap_free(&t->owner);
	free(t);
}

int gpu_ktab_put(struct gpu_ktab *t, uint64_t handle, uint64_t owner, uint64_t value)
{
	bool known = hashmap_get(&t->value, handle, NULL);

	if (!known && t->value.len >= t->cap) {
		count(t->counts.over_cap, 1);
		return -ENOSPC;
	}
	if (hashmap_put(&t->value, handle, value))
		return -ENOMEM;
	if (hashmap_put(&t->owner, handle, owner)) {
		hashmap_del(&t->value, handle);
		count(t->counts.live, -(int64_t)known);
		return -ENOMEM;
	}
	if (!known)
		count(t->counts.live, 1);
	return 0;
}

bool gpu_ktab_get(const struct gpu_ktab *t, uint64_t handle, uint64_t *value, uint64_t *owner)
{
	if (!t || !hashmap_get(&t->value, handle, value))
		return false;
	if (owner)
		hashmap_get(&t->owner, handle, owner);
	return true;
}

size_t gpu_ktab_drop_owner(struct gpu_ktab *t, uint64_t owner)
{
	uint64_t handle, o;
	size_t i = 0, n = 0;

	if (!t)
		return 0;
	/* Deleting leaves a tombstone and moves nothing: the walk goes on. */
	while (hashmap_next(&t->owner, &i, &handle, &o)) {
		if (o != owner)
			continue;
		hashmap_del(&t->owner, handle);
		hashmap_del(&t->value, handle);
		n++;
	}
	count(t->counts.live, -(int64_t)n);
	return n;
}

size_t gpu_ktab_len(const struct gpu_ktab *t)
{
	return t ? t->value.len : 0;
}
