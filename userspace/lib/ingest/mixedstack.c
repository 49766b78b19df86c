#include "mixedstack.h"

#include <stddef.h>

static uint32_t put(uint32_t *out, uint32_t n, uint32_t max, uint32_t id)
{
	if (n < max)
		out[n++] = id;
	return n;
}

static uint32_t put_range(uint32_t *out, uint32_t n, uint32_t max, const uint32_t *ids,
			  uint32_t from, uint32_t to)
{
	for (; from < to; from++)
		n = put(out, n, max, ids[from]);
	return n;
}

/* Index in py where group g starts (groups counted from the root). */
static uint32_t group_start(const struct mixed_in *in, uint32_t g)
{
	uint32_t i, seen = 0;

	for (i = 0; i < in->npy; i++) {
		if (i == 0 || in->py_entry[i]) {
			if (seen == g)
				return i;
			seen++;
		}
	}
	return in->npy;
}

static uint32_t count_groups(const struct mixed_in *in)
{
	uint32_t i, g = 0;

	for (i = 0; i < in->npy; i++)
		if (i == 0 || in->py_entry[i])
			g++;
	return g;
}

/* Index just past the last eval frame, 0 if there is none. */
static uint32_t after_last_eval(const struct mixed_in *in)
{
	uint32_t i, after = 0;

	for (i = 0; i < in->nnative; i++)
		if (in->is_eval[i])
			after = i + 1;
	return after;
}

/* Python frames without their leaf side.  Eval frames pair with groups
 * from the root, where both walks are whole; the last eval frame takes
 * every group left.  Native frames between eval frames whose Python was
 * cut are left out with it.  Without a native root to pair from (the
 * native walk was cut too, or saw no eval frame) the Python frames go
 * first. */
static uint32_t merge_py_cut(const struct mixed_in *in, uint32_t ngroups, uint32_t *out,
			     uint32_t max)
{
	uint32_t i, g = 0, n = 0, tail = after_last_eval(in);

	if (in->native_cut || !tail)
		n = put_range(out, n, max, in->py, 0, in->npy);
	for (i = 0; i < tail && !in->native_cut && g < ngroups; i++) {
		bool last = i + 1 == tail;

		if (!in->is_eval[i]) {
			n = put(out, n, max, in->native[i]);
			continue;
		}
		n = put_range(out, n, max, in->py, group_start(in, g),
			      last ? in->npy : group_start(in, g + 1));
		g = last ? ngroups : g + 1;
	}
	n = put(out, n, max, in->cut_marker);
	return put_range(out, n, max, in->native, tail, in->nnative);
}

uint32_t mixed_merge(const struct mixed_in *in, uint32_t *out, uint32_t max)
{
	uint32_t ngroups = count_groups(in), nevals = 0, i, eval = 0, n = 0;

	for (i = 0; i < in->nnative; i++)
		nevals += in->is_eval[i];
	if (!ngroups)
		return put_range(out, 0, max, in->native, 0, in->nnative);
	if (in->py_cut)
		return merge_py_cut(in, ngroups, out, max);
	if (!nevals) {
		n = put_range(out, 0, max, in->py, 0, in->npy);
		return put_range(out, n, max, in->native, 0, in->nnative);
	}
	for (i = 0; i < in->nnative; i++) {
		/* Pair from the leaf: eval k (root-first) gets group
		 * k + ngroups - nevals; the first eval also takes every group
		 * before that. */
		int64_t g;
		uint32_t from, to;

		if (!in->is_eval[i]) {
			n = put(out, n, max, in->native[i]);
			continue;
		}
		g = (int64_t)eval + ngroups - nevals;
		eval++;
		if (g < 0) {
			/* More eval frames than groups: this one ran no Python
			 * we saw, so keep it as the native frame it is. */
			n = put(out, n, max, in->native[i]);
			continue;
		}
		from = eval == 1 ? 0 : group_start(in, (uint32_t)g);
		to = group_start(in, (uint32_t)g + 1);
		n = put_range(out, n, max, in->py, from, to);
	}
	return n;
}
