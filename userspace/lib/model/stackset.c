#include "stackset.h"
#include "array.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct stackset *stackset_new(void)
{
	struct stackset *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return NULL;
	if (stackset_set_str(&ss->unit, "samples") || stackset_set_str(&ss->type, "cpu")) {
		stackset_free(ss);
		return NULL;
	}
	return ss;
}

void stackset_free(struct stackset *ss)
{
	size_t i;

	if (!ss)
		return;
	for (i = 0; i < ss->nframes; i++)
		free(ss->frames[i].name);
	for (i = 0; i < ss->nmodules; i++) {
		free(ss->modules[i].path);
		free(ss->modules[i].build_id);
	}
	free(ss->modules);
	hashmap_free(&ss->module_index);
	for (i = 0; i < ss->nstacks; i++)
		free(ss->stacks[i].frames);
	free(ss->frames);
	free(ss->stacks);
	free(ss->title);
	free(ss->workload);
	free(ss->unit);
	free(ss->type);
	hashmap_free(&ss->frame_index);
	hashmap_free(&ss->stack_index);
	free(ss);
}

int stackset_set_str(char **field, const char *value)
{
	char *copy = value ? strdup(value) : NULL;

	if (value && !copy)
		return -ENOMEM;
	free(*field);
	*field = copy;
	return 0;
}

static uint64_t frame_hash(uint32_t kind, const char *name)
{
	return hash64_bytes(name, strlen(name), kind + 1);
}

static bool same_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

int64_t stackset_module(struct stackset *ss, const char *path, const char *build_id)
{
	uint64_t h, v;
	struct ss_module *m;

	if (!build_id)
		build_id = "";
	h = hash64_bytes(path, strlen(path), hash64_bytes(build_id, strlen(build_id), 7));
	for (; hashmap_get(&ss->module_index, h, &v); h++) {
		m = &ss->modules[v - 1];
		if (!strcmp(m->path, path) && !strcmp(m->build_id, build_id))
			return (int64_t)v;
	}
	if (array_grow((void **)&ss->modules, &ss->modules_cap, ss->nmodules + 1, sizeof(*ss->modules)))
		return -ENOMEM;
	m = &ss->modules[ss->nmodules];
	m->path = strdup(path);
	m->build_id = strdup(build_id);
	if (!m->path || !m->build_id || hashmap_put(&ss->module_index, h, ss->nmodules + 1)) {
		free(m->path);
		free(m->build_id);
		return -ENOMEM;
	}
	return (int64_t)++ss->nmodules;
}

const struct ss_module *stackset_frame_module(const struct stackset *ss, uint32_t id)
{
	uint32_t m = id < ss->nframes ? ss->frames[id].module : 0;

	return m && m <= ss->nmodules ? &ss->modules[m - 1] : NULL;
}

/* Frame a of ss and frame b of other: same kind, name and module (by
 * path and build-id, as module numbers differ between stacksets). */
static bool frames_equal(const struct stackset *ss, uint32_t a, const struct stackset *other,
			 uint32_t b)
{
	const struct ss_frame *fa = &ss->frames[a], *fb = &other->frames[b];
	const struct ss_module *ma, *mb;

	if (fa->kind != fb->kind || strcmp(fa->name, fb->name))
		return false;
	if (ss == other)
		return fa->module == fb->module;
	ma = stackset_frame_module(ss, a);
	mb = stackset_frame_module(other, b);
	if (!ma || !mb)
		return !ma && !mb;
	return same_str(ma->path, mb->path) && same_str(ma->build_id, mb->build_id);
}

/* The id of the frame with this kind, name and module, probing from its
 * hash; -ENOENT with *h at the free slot when absent. */
static int64_t find_frame(const struct stackset *ss, uint64_t *h, uint32_t kind, const char *name,
			  uint32_t module)
{
	uint64_t v;

	/* Open-address by probing successive hash values: a collision of
	 * the 64-bit hash must never merge two different frames. */
	for (;; (*h)++) {
		const struct ss_frame *f;

		if (!hashmap_get(&ss->frame_index, *h, &v))
			return -ENOENT;
		f = &ss->frames[v - 1];
		if (f->kind == kind && f->module == module && strcmp(f->name, name) == 0)
			return (int64_t)(v - 1);
	}
}

/* A new frame at the end of ss->frames, not yet counted in nframes (the
 * caller does once it is indexed, or at once): 0 or -ENOMEM. */
static int append_frame(struct stackset *ss, uint32_t kind, const char *name, uint32_t module)
{
	struct ss_frame *f;

	if (array_grow((void **)&ss->frames, &ss->frames_cap, ss->nframes + 1, sizeof(*ss->frames)))
		return -ENOMEM;
	f = &ss->frames[ss->nframes];
	if (!(f->name = strdup(name)))
		return -ENOMEM;
	f->kind = kind;
	f->module = module <= ss->nmodules ? module : 0;
	return 0;
}

int64_t stackset_intern_in(struct stackset *ss, uint32_t kind, const char *name, uint32_t module)
{
	uint64_t h = frame_hash(kind, name);
	int64_t id = find_frame(ss, &h, kind, name, module);

	if (id >= 0)
		return id;
	if (append_frame(ss, kind, name, module))
		return -ENOMEM;
	if (hashmap_put(&ss->frame_index, h, ss->nframes + 1)) {
		free(ss->frames[ss->nframes].name);
		return -ENOMEM;
	}
	return (int64_t)ss->nframes++;
}

int64_t stackset_add_unindexed(struct stackset *ss, uint32_t kind, const char *name,
			       uint32_t module)
{
	if (append_frame(ss, kind, name, module))
		return -ENOMEM;
	return (int64_t)ss->nframes++;
}

int stackset_rename(struct stackset *ss, uint32_t id, uint32_t kind, const char *name,
		    uint32_t module)
{
	char *copy;

	if (id >= ss->nframes)
		return -EINVAL;
	if (!(copy = strdup(name)))
		return -ENOMEM;
	free(ss->frames[id].name);
	ss->frames[id].name = copy;
	ss->frames[id].kind = kind;
	ss->frames[id].module = module <= ss->nmodules ? module : 0;
	return 0;
}

int64_t stackset_intern(struct stackset *ss, uint32_t kind, const char *name)
{
	return stackset_intern_in(ss, kind, name, 0);
}

int64_t stackset_copy_frame(struct stackset *dst, const struct stackset *src, uint32_t id)
{
	const struct ss_module *m = stackset_frame_module(src, id);
	int64_t mod = 0;

	if (id >= src->nframes)
		return -EINVAL;
	if (m && (mod = stackset_module(dst, m->path, m->build_id)) < 0)
		return mod;
	return stackset_intern_in(dst, src->frames[id].kind, src->frames[id].name, (uint32_t)mod);
}

int stackset_add(struct stackset *ss, const uint32_t *frames, uint32_t depth, uint64_t count)
{
	int64_t idx = stackset_add_at(ss, frames, depth, count);

	return idx < 0 ? (int)idx : 0;
}

int64_t stackset_add_at(struct stackset *ss, const uint32_t *frames, uint32_t depth,
			uint64_t count)
{
	uint64_t h = hash64_bytes(frames, depth * sizeof(*frames), depth), v;
	struct ss_stack *st;
	uint32_t i;

	for (i = 0; i < depth; i++)
		if (frames[i] >= ss->nframes)
			return -EINVAL;
	for (;; h++) {
		if (!hashmap_get(&ss->stack_index, h, &v))
			break;
		st = &ss->stacks[v - 1];
		if (st->depth == depth && !memcmp(st->frames, frames, depth * sizeof(*frames))) {
			st->count += count;
			ss->total += count;
			return (int64_t)(v - 1);
		}
	}
	if (array_grow((void **)&ss->stacks, &ss->stacks_cap, ss->nstacks + 1, sizeof(*ss->stacks)))
		return -ENOMEM;
	st = &ss->stacks[ss->nstacks];
	st->frames = malloc(depth ? depth * sizeof(*frames) : 1);
	if (!st->frames)
		return -ENOMEM;
	memcpy(st->frames, frames, depth * sizeof(*frames));
	st->depth = depth;
	st->count = count;
	if (hashmap_put(&ss->stack_index, h, ss->nstacks + 1)) {
		free(st->frames);
		return -ENOMEM;
	}
	ss->total += count;
	return (int64_t)ss->nstacks++;
}

int stackset_add_named(struct stackset *ss, const uint32_t *kinds, const char *const *names,
		       uint32_t depth, uint64_t count)
{
	uint32_t *ids = malloc((depth ? depth : 1) * sizeof(*ids));
	uint32_t i;
	int err = 0;

	if (!ids)
		return -ENOMEM;
	for (i = 0; i < depth; i++) {
		int64_t id = stackset_intern(ss, kinds[i], names[i]);

		if (id < 0) {
			err = (int)id;
			goto out;
		}
		ids[i] = (uint32_t)id;
	}
	err = stackset_add(ss, ids, depth, count);
out:
	free(ids);
	return err;
}

static const struct stackset *sort_ctx;

static int cmp_stacks(const void *pa, const void *pb)
{
	const struct ss_stack *a = pa, *b = pb;
	uint32_t i, n = a->depth < b->depth ? a->depth : b->depth;

	for (i = 0; i < n; i++) {
		int c = strcmp(sort_ctx->frames[a->frames[i]].name, sort_ctx->frames[b->frames[i]].name);

		if (c)
			return c;
	}
	return (a->depth > b->depth) - (a->depth < b->depth);
}

void stackset_sort(struct stackset *ss)
{
	size_t i;

	sort_ctx = ss;
	qsort(ss->stacks, ss->nstacks, sizeof(*ss->stacks), cmp_stacks);
	sort_ctx = NULL;
	/* Indices moved: rebuild the stack index. */
	hashmap_free(&ss->stack_index);
	for (i = 0; i < ss->nstacks; i++) {
		const struct ss_stack *st = &ss->stacks[i];
		uint64_t h = hash64_bytes(st->frames, st->depth * sizeof(uint32_t), st->depth);

		while (hashmap_get(&ss->stack_index, h, NULL))
			h++;
		hashmap_put(&ss->stack_index, h, i + 1);
	}
}

bool stackset_root_tid(const char *label, size_t *nlen, uint32_t *tid)
{
	size_t len = strlen(label);
	const char *open;
	char *end;
	unsigned long v;

	if (len < 4 || label[len - 1] != ')')
		return false;
	open = strrchr(label, '(');
	if (!open || open == label || open[-1] != ' ')
		return false;
	v = strtoul(open + 1, &end, 10);
	if (end != label + len - 1 || end == open + 1 || v > UINT32_MAX)
		return false;
	*nlen = (size_t)(open - 1 - label);
	*tid = (uint32_t)v;
	return true;
}

/* Index the stacks anew, adding each into the first equal one before it
 * (frames changed in place may have made two stacks one). */
static int merge_stacks(struct stackset *ss)
{
	size_t i, n = 0;
	uint64_t v;
	int err = 0;

	hashmap_free(&ss->stack_index);
	for (i = 0; i < ss->nstacks; i++) {
		struct ss_stack st = ss->stacks[i];
		size_t bytes = st.depth * sizeof(uint32_t);
		uint64_t h = hash64_bytes(st.frames, bytes, st.depth);

		for (; hashmap_get(&ss->stack_index, h, &v); h++)
			if (ss->stacks[v - 1].depth == st.depth &&
			    !memcmp(ss->stacks[v - 1].frames, st.frames, bytes))
				break;
		if (hashmap_get(&ss->stack_index, h, &v)) {
			ss->stacks[v - 1].count += st.count;
			free(st.frames);
			continue;
		}
		ss->stacks[n] = st;
		/* Out of memory: the rest kept unindexed, listed apart. */
		if (!err && hashmap_put(&ss->stack_index, h, n + 1))
			err = -ENOMEM;
		n++;
	}
	ss->nstacks = n;
	return err;
}

int stackset_replace_at(struct stackset *ss, uint32_t pos, const struct hashmap *map)
{
	size_t i;
	uint64_t to;

	for (i = 0; i < ss->nstacks; i++) {
		struct ss_stack *st = &ss->stacks[i];

		if (st->depth > pos && hashmap_get(map, st->frames[pos], &to) && to < ss->nframes)
			st->frames[pos] = (uint32_t)to;
	}
	return merge_stacks(ss);
}

/* Find other's stack i in ss by frame kinds and names. */
uint64_t stackset_count_like(const struct stackset *ss, const struct stackset *other, size_t i)
{
	const struct ss_stack *want = &other->stacks[i];
	uint32_t *ids = malloc((want->depth ? want->depth : 1) * sizeof(*ids));
	uint64_t h, v, count = 0;
	uint32_t d;

	if (!ids)
		return 0;
	for (d = 0; d < want->depth; d++) {
		const struct ss_frame *f = &other->frames[want->frames[d]];
		uint64_t fh = frame_hash(f->kind, f->name), fv;

		/* Same probing as stackset_intern: walk until found or absent. */
		for (;; fh++) {
			if (!hashmap_get(&ss->frame_index, fh, &fv))
				goto out;
			if (frames_equal(ss, (uint32_t)(fv - 1), other, want->frames[d]))
				break;
		}
		ids[d] = (uint32_t)(fv - 1);
	}
	h = hash64_bytes(ids, want->depth * sizeof(*ids), want->depth);
	for (; hashmap_get(&ss->stack_index, h, &v); h++) {
		const struct ss_stack *st = &ss->stacks[v - 1];

		if (st->depth == want->depth && !memcmp(st->frames, ids, want->depth * sizeof(*ids))) {
			count = st->count;
			break;
		}
	}
out:
	free(ids);
	return count;
}

struct stackset *stackset_subtract(const struct stackset *after, const struct stackset *before)
{
	struct stackset *out = stackset_new();
	size_t i;

	if (!out)
		return NULL;
	if (stackset_set_str(&out->title, after->title) || stackset_set_str(&out->unit, after->unit) ||
	    stackset_set_str(&out->type, after->type) ||
	    stackset_set_str(&out->workload, after->workload))
		goto fail;
	out->rate_hz = after->rate_hz;
	out->start_ns = before->end_ns ? before->end_ns : after->start_ns;
	out->end_ns = after->end_ns;
	for (i = 0; i < after->nstacks; i++) {
		const struct ss_stack *st = &after->stacks[i];
		uint64_t was = stackset_count_like(before, after, i);
		uint32_t ids[st->depth ? st->depth : 1], d;

		/* Signed (mmap): any change, either way, is the window's. */
		if (stackset_signed(after) ? st->count == was : st->count <= was)
			continue;
		for (d = 0; d < st->depth; d++) {
			int64_t id = stackset_copy_frame(out, after, st->frames[d]);

			if (id < 0)
				goto fail;
			ids[d] = (uint32_t)id;
		}
		if (stackset_add(out, ids, st->depth, st->count - was))
			goto fail;
	}
	return out;
fail:
	stackset_free(out);
	return NULL;
}
