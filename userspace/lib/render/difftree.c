#include "difftree.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int add_entry(struct difftree *t, const uint32_t *map, const struct ss_stack *st,
		     bool after)
{
	struct difftree_stack *e;
	uint32_t i;

	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		void *p = realloc(t->stacks, ncap * sizeof(*t->stacks));

		if (!p)
			return -ENOMEM;
		t->stacks = p;
		t->cap = ncap;
	}
	e = &t->stacks[t->n];
	e->frames = malloc((st->depth ? st->depth : 1) * sizeof(*e->frames));
	if (!e->frames)
		return -ENOMEM;
	for (i = 0; i < st->depth; i++)
		e->frames[i] = map[st->frames[i]];
	e->depth = st->depth;
	e->after = after ? st->count : 0;
	e->before = after ? 0 : st->count;
	if (st->depth > t->max_depth)
		t->max_depth = st->depth;
	t->n++;
	return 0;
}

/* Translate one side's frames into the union table and add its stacks. */
static int add_side(struct difftree *t, const struct stackset *ss, bool after)
{
	uint64_t *total = after ? &t->after_total : &t->before_total;
	uint32_t *map = malloc((ss->nframes ? ss->nframes : 1) * sizeof(*map));
	size_t i;
	int err = 0;

	if (!map)
		return -ENOMEM;
	for (i = 0; i < ss->nframes && !err; i++) {
		int64_t id = stackset_intern(t->frames, ss->frames[i].kind, ss->frames[i].name);

		if (id < 0)
			err = (int)id;
		else
			map[i] = (uint32_t)id;
	}
	for (i = 0; i < ss->nstacks && !err; i++) {
		const struct ss_stack *st = &ss->stacks[i];

		if (!st->count)
			continue;
		if (st->count > UINT64_MAX - *total)
			err = -EOVERFLOW;
		else
			err = add_entry(t, map, st, after);
		*total += err ? 0 : st->count;
	}
	free(map);
	return err;
}

/* Level by level: name, then kind, then id (ids are unique per (kind,
 * name) in the union table, so equal paths compare equal). */
static int cmp_path(const void *pa, const void *pb, void *arg)
{
	const struct difftree_stack *a = pa, *b = pb;
	const struct ss_frame *fr = ((const struct stackset *)arg)->frames;
	uint32_t i, n = a->depth < b->depth ? a->depth : b->depth;
	int c;

	for (i = 0; i < n; i++) {
		uint32_t x = a->frames[i], y = b->frames[i];

		if (x == y)
			continue;
		c = strcmp(fr[x].name, fr[y].name);
		if (c)
			return c;
		if (fr[x].kind != fr[y].kind)
			return fr[x].kind < fr[y].kind ? -1 : 1;
		return x < y ? -1 : 1;
	}
	return (a->depth > b->depth) - (a->depth < b->depth);
}

static bool same_path(const struct difftree_stack *a, const struct difftree_stack *b)
{
	return a->depth == b->depth && !memcmp(a->frames, b->frames, a->depth * sizeof(uint32_t));
}

/* Sort, then fold the before and after entries of one path together. */
static void merge_paths(struct difftree *t)
{
	size_t i, o = 0;

	if (t->n) /* NULL then, which qsort must not see */
		qsort_r(t->stacks, t->n, sizeof(*t->stacks), cmp_path, t->frames);
	for (i = 0; i < t->n; i++) {
		if (o && same_path(&t->stacks[o - 1], &t->stacks[i])) {
			t->stacks[o - 1].after += t->stacks[i].after;
			t->stacks[o - 1].before += t->stacks[i].before;
			free(t->stacks[i].frames);
			continue;
		}
		t->stacks[o++] = t->stacks[i];
	}
	t->n = o;
}

int difftree_init(struct difftree *t, const struct stackset *before,
		  const struct stackset *after)
{
	int err;

	memset(t, 0, sizeof(*t));
	t->frames = stackset_new();
	if (!t->frames)
		return -ENOMEM;
	err = add_side(t, after, true);
	if (!err)
		err = add_side(t, before, false);
	if (err) {
		difftree_free(t);
		return err;
	}
	merge_paths(t);
	return 0;
}

void difftree_free(struct difftree *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->stacks[i].frames);
	free(t->stacks);
	stackset_free(t->frames);
	memset(t, 0, sizeof(*t));
}

static int close_to(struct difftree_node *path, uint32_t *plen, uint32_t keep, difftree_cb cb,
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

static uint32_t common_prefix(const struct difftree_node *path, uint32_t plen,
			      const struct difftree_stack *st)
{
	uint32_t c = 0;

	while (c + 1 < plen && c < st->depth && path[c + 1].frame == st->frames[c])
		c++;
	return c;
}

/* Open the nodes of st below the common prefix and add its counts. */
static void descend(struct difftree_node *path, uint32_t *plen, uint32_t c,
		    const struct difftree_stack *st, uint64_t cum, uint64_t *seq)
{
	uint32_t i;

	for (i = c; i < st->depth; i++, (*plen)++)
		path[*plen] = (struct difftree_node){
			.frame = st->frames[i], .depth = *plen, .parent = path[*plen - 1].frame,
			.start = cum, .seq = ++*seq
		};
	for (i = 0; i < *plen; i++) {
		path[i].after += st->after;
		path[i].before += st->before;
	}
	path[*plen - 1].after_self += st->after;
	path[*plen - 1].before_self += st->before;
}

int difftree_walk(const struct difftree *t, difftree_cb cb, void *ctx)
{
	struct difftree_node *path;
	uint64_t cum = 0, seq = 0;
	uint32_t plen = 1, c;
	size_t k;
	int err = 0;

	path = calloc((size_t)t->max_depth + 1, sizeof(*path));
	if (!path)
		return -ENOMEM;
	path[0].frame = RENDER_TREE_ROOT;
	for (k = 0; k < t->n; k++) {
		const struct difftree_stack *st = &t->stacks[k];

		c = common_prefix(path, plen, st);
		err = close_to(path, &plen, c + 1, cb, ctx);
		if (err)
			goto out;
		descend(path, &plen, c, st, cum, &seq);
		cum += st->after;
	}
	err = close_to(path, &plen, 0, cb, ctx);
out:
	free(path);
	return err;
}
