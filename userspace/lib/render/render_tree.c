#include "render_tree.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct order_ctx {
	const struct stackset *ss;
	enum render_order mode;
};

static int cmp_frame(const struct stackset *ss, uint32_t a, uint32_t b, bool kinds)
{
	const struct ss_frame *fa = &ss->frames[a], *fb = &ss->frames[b];
	int c;

	if (a == b)
		return 0;
	c = strcmp(fa->name, fb->name);
	if (c || !kinds)
		return c;
	if (fa->kind != fb->kind)
		return fa->kind < fb->kind ? -1 : 1;
	return a < b ? -1 : 1;
}

static int cmp_levels(const struct stackset *ss, const struct ss_stack *a, const struct ss_stack *b,
		      bool kinds)
{
	uint32_t i, n = a->depth < b->depth ? a->depth : b->depth;
	int c;

	for (i = 0; i < n; i++) {
		c = cmp_frame(ss, a->frames[i], b->frames[i], kinds);
		if (c)
			return c;
	}
	return (a->depth > b->depth) - (a->depth < b->depth);
}

static int cmp_order(const void *pa, const void *pb, void *arg)
{
	const struct order_ctx *ctx = arg;
	size_t ia = *(const size_t *)pa, ib = *(const size_t *)pb;
	const struct ss_stack *a = &ctx->ss->stacks[ia], *b = &ctx->ss->stacks[ib];
	int c;

	/* Name order first for folded output; kinds then break ties so
	 * stacks that differ only in kind still sort the same every time. */
	c = cmp_levels(ctx->ss, a, b, ctx->mode == RENDER_ORDER_TREE);
	if (!c && ctx->mode == RENDER_ORDER_NAMES)
		c = cmp_levels(ctx->ss, a, b, true);
	if (!c)
		c = (ia > ib) - (ia < ib);
	return c;
}

int render_tree_init(struct render_tree *t, const struct stackset *ss, enum render_order mode)
{
	struct order_ctx ctx = { .ss = ss, .mode = mode };
	size_t i;

	memset(t, 0, sizeof(*t));
	t->ss = ss;
	t->order = malloc((ss->nstacks ? ss->nstacks : 1) * sizeof(*t->order));
	if (!t->order)
		return -ENOMEM;
	for (i = 0; i < ss->nstacks; i++) {
		const struct ss_stack *st = &ss->stacks[i];

		if (!st->count)
			continue;
		/* Signed counts wrap by design: the total is the net. */
		if (st->count > UINT64_MAX - t->total && !stackset_signed(ss)) {
			render_tree_free(t);
			return -EOVERFLOW;
		}
		t->total += st->count;
		if (st->depth > t->max_depth)
			t->max_depth = st->depth;
		t->order[t->n++] = i;
	}
	qsort_r(t->order, t->n, sizeof(*t->order), cmp_order, &ctx);
	return 0;
}

void render_tree_free(struct render_tree *t)
{
	free(t->order);
	t->order = NULL;
	t->n = 0;
}

int render_frames_number(struct render_frames *rf, const struct render_tree *t)
{
	size_t n = t->ss->nframes ? t->ss->nframes : 1, k;
	uint32_t i;

	rf->n = 0;
	rf->index = calloc(n, sizeof(*rf->index));
	rf->order = calloc(n, sizeof(*rf->order));
	if (!rf->index || !rf->order) {
		render_frames_free(rf);
		return -ENOMEM;
	}
	for (k = 0; k < t->n; k++) {
		const struct ss_stack *st = &t->ss->stacks[t->order[k]];

		for (i = 0; i < st->depth; i++) {
			uint32_t f = st->frames[i];

			if (!rf->index[f]) {
				rf->order[rf->n] = f;
				rf->index[f] = ++rf->n;
			}
		}
	}
	return 0;
}

void render_frames_free(struct render_frames *rf)
{
	free(rf->index);
	free(rf->order);
	rf->index = rf->order = NULL;
	rf->n = 0;
}

/* Close path nodes deeper than keep (path[0] is the root). */
static int close_to(struct render_node *path, uint32_t *plen, uint32_t keep, render_tree_cb cb,
		    void *ctx)
{
	int err;

	while (*plen > keep) {
		(*plen)--;
		err = cb(&path[*plen], ctx);
		if (err)
			return err;
	}
	return 0;
}

static uint32_t common_prefix(const struct render_node *path, uint32_t plen,
			      const struct ss_stack *st)
{
	uint32_t c = 0;

	while (c + 1 < plen && c < st->depth && path[c + 1].frame == st->frames[c])
		c++;
	return c;
}

int render_tree_walk(const struct render_tree *t, render_tree_cb cb, void *ctx)
{
	struct render_node *path;
	uint64_t cum = 0;
	uint32_t plen = 1, i, c;
	size_t k;
	int err = 0;

	path = calloc((size_t)t->max_depth + 1, sizeof(*path));
	if (!path)
		return -ENOMEM;
	path[0].frame = RENDER_TREE_ROOT;
	for (k = 0; k < t->n; k++) {
		const struct ss_stack *st = &t->ss->stacks[t->order[k]];

		c = common_prefix(path, plen, st);
		err = close_to(path, &plen, c + 1, cb, ctx);
		if (err)
			goto out;
		for (i = c; i < st->depth; i++, plen++)
			path[plen] = (struct render_node){
				.frame = st->frames[i], .depth = plen, .start = cum
			};
		for (i = 0; i < plen; i++)
			path[i].total += st->count;
		path[plen - 1].self += st->count;
		cum += st->count;
	}
	err = close_to(path, &plen, 0, cb, ctx);
out:
	free(path);
	return err;
}
