#include "pytstate.h"

#include <errno.h>

#include "hashmap.h"
#include "pymem.h"

/* One interpreter's thread list; seen holds the states met so far. */
static int each_in_interp(const struct pyruntime *rt, uint64_t interp, struct hashmap *seen,
			  pytstate_fn fn, void *arg)
{
	uint64_t ts, v;
	size_t n;
	int err = 0;

	if (pymem_read_u64(rt->pid, interp + rt->off.interp_tstate_head, &ts))
		ts = 0;
	for (n = 0; !err && ts && n < PYTSTATE_MAX_THREADS; n++) {
		if (hashmap_get(seen, ts, &v))
			break; /* looped back */
		if (hashmap_put(seen, ts, 1))
			return -ENOMEM;
		err = fn(rt, interp, ts, arg);
		if (!err && pymem_read_u64(rt->pid, ts + rt->off.tstate_next, &ts))
			break;
	}
	return err ? err : fn(rt, interp, 0, arg);
}

int pytstate_each(const struct pyruntime *rt, pytstate_fn fn, void *arg)
{
	struct hashmap seen;
	uint64_t interp, v;
	size_t n;
	int err;

	hashmap_init(&seen);
	err = pymem_read_u64(rt->pid, rt->runtime_addr + rt->off.runtime_interp_head, &interp);
	for (n = 0; !err && interp && n < PYTSTATE_MAX_INTERPS; n++) {
		if (hashmap_get(&seen, interp, &v))
			break;
		err = hashmap_put(&seen, interp, 1);
		if (!err)
			err = each_in_interp(rt, interp, &seen, fn, arg);
		if (!err && pymem_read_u64(rt->pid, interp + rt->off.interp_next, &interp))
			break;
	}
	hashmap_free(&seen);
	return err;
}
