#include "render_trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "framename.h"
#include "hashmap.h"
#include "jsonw.h"

/* What an event becomes on its thread's track. */
enum tr_role { TR_SKIP, TR_SAMPLE, TR_BLOCK, TR_CALL, TR_INSTANT };

/* Calls hold their stack open under a frame of their own, numbered after
 * the tlset's frames. */
enum tr_marker { TR_M_CUDA, TR_M_DRIVER, TR_NMARKERS };

static const struct {
	const char *type_name;
	enum tr_role role;
	int marker;
} roles[] = {
    {"cpu", TR_SAMPLE, -1},	  {"off-cpu", TR_BLOCK, -1},
    {"cuda", TR_CALL, TR_M_CUDA}, {"gpu-driver", TR_CALL, TR_M_DRIVER},
    {"memory", TR_INSTANT, -1},
};

static const char *const marker_names[TR_NMARKERS] = {
    [TR_M_CUDA] = "[CUDA call]",
    [TR_M_DRIVER] = "[GPU driver call]",
};

/* A stretch of a thread's time with one stack: a sample or a block
 * (leaves, never overlapping) or a call (spans, may hold leaves). */
struct tr_span {
	uint64_t start, end;
	uint32_t stack;
	int marker;
};

struct tr_ctx {
	const struct tlset *t;
	struct jsonw w;
	enum tr_role role_of[TLSET_MAX_TYPES];
	int marker_of[TLSET_MAX_TYPES];
	uint64_t period_ns;
	struct tlset_threads g; /* the events by thread */
	/* One thread's work, reused from thread to thread. */
	struct tr_span *leaves, *calls;
	size_t nleaves, leaves_cap, ncalls, calls_cap;
	uint64_t *bounds;
	size_t nbounds, bounds_cap;
	uint32_t *open, *next; /* frame ids: tlset frames, then markers */
	size_t nopen, open_cap, nnext, next_cap;
	size_t *active; /* calls under way, in start order */
	size_t nactive, active_cap;
};

static void map_types(struct tr_ctx *c)
{
	uint32_t i;
	size_t r;

	for (i = 0; i < TLSET_MAX_TYPES; i++) {
		c->role_of[i] = TR_SKIP;
		c->marker_of[i] = -1;
	}
	for (i = 0; i < c->t->ntypes; i++)
		for (r = 0; r < sizeof(roles) / sizeof(roles[0]); r++)
			if (!strcmp(c->t->types[i], roles[r].type_name)) {
				c->role_of[i] = roles[r].role;
				c->marker_of[i] = roles[r].marker;
			}
}

static double us_after(const struct tr_ctx *c, uint64_t ns)
{
	return ns >= c->g.start_ns ? (double)(ns - c->g.start_ns) / 1e3
				 : -(double)(c->g.start_ns - ns) / 1e3;
}

static int push_span(struct tr_span **v, size_t *n, size_t *cap, const struct tr_span *s)
{
	if (array_grow((void **)v, cap, *n + 1, sizeof(**v)))
		return -ENOMEM;
	(*v)[(*n)++] = *s;
	return 0;
}

static int push_bound(struct tr_ctx *c, uint64_t ns)
{
	if (array_grow((void **)&c->bounds, &c->bounds_cap, c->nbounds + 1, sizeof(*c->bounds)))
		return -ENOMEM;
	c->bounds[c->nbounds++] = ns;
	return 0;
}

/* A sample stands until the next leaf when that comes soon enough (the
 * clock's jitter must not cut a running function into one bar per
 * sample), else one period; a block for its length, cut where the next
 * leaf begins (clocks of two sources may disagree by a little). */
static void end_leaves(struct tr_ctx *c)
{
	uint64_t gap = (uint64_t)(TRACE_GAP_PERIODS * (double)c->period_ns);
	size_t i;

	for (i = 0; i < c->nleaves; i++) {
		struct tr_span *l = &c->leaves[i];
		uint64_t next = i + 1 < c->nleaves ? c->leaves[i + 1].start : UINT64_MAX;

		if (l->end == 0) /* a sample */
			l->end = next - l->start <= gap ? next : l->start + c->period_ns;
		if (l->end > next)
			l->end = next;
	}
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The thread's leaves and calls, and every time where what it shows may
 * change, sorted and unique. */
static int collect(struct tr_ctx *c, size_t ti)
{
	size_t i, n = 0;
	int err = 0;

	c->nleaves = c->ncalls = c->nbounds = 0;
	for (i = c->g.first[ti]; i < c->g.first[ti + 1] && !err; i++) {
		const struct tl_event *e = &c->t->events[c->g.order[i]];
		struct tr_span s = {e->start_ns, 0, e->stack, c->marker_of[e->type]};

		switch (c->role_of[e->type]) {
		case TR_SAMPLE:
			err = push_span(&c->leaves, &c->nleaves, &c->leaves_cap, &s);
			break;
		case TR_BLOCK:
			s.end = e->start_ns + (e->weight ? e->weight : 1);
			err = push_span(&c->leaves, &c->nleaves, &c->leaves_cap, &s);
			break;
		case TR_CALL:
			s.end = e->start_ns + (e->weight ? e->weight : 1);
			err = push_span(&c->calls, &c->ncalls, &c->calls_cap, &s);
			break;
		default:
			break;
		}
	}
	if (err)
		return err;
	end_leaves(c);
	for (i = 0; i < c->nleaves && !err; i++)
		if (!(err = push_bound(c, c->leaves[i].start)))
			err = push_bound(c, c->leaves[i].end);
	for (i = 0; i < c->ncalls && !err; i++)
		if (!(err = push_bound(c, c->calls[i].start)))
			err = push_bound(c, c->calls[i].end);
	if (err)
		return err;
	qsort(c->bounds, c->nbounds, sizeof(*c->bounds), by_u64);
	for (i = 0; i < c->nbounds; i++)
		if (!n || c->bounds[n - 1] != c->bounds[i])
			c->bounds[n++] = c->bounds[i];
	c->nbounds = n;
	return 0;
}

static int push_frame(uint32_t **v, size_t *n, size_t *cap, uint32_t f)
{
	if (array_grow((void **)v, cap, *n + 1, sizeof(**v)))
		return -ENOMEM;
	(*v)[(*n)++] = f;
	return 0;
}

/* Whether stack a begins with all of stack b. */
static bool extends(const struct ss_stack *a, const struct ss_stack *b)
{
	return a->depth >= b->depth && !memcmp(a->frames, b->frames, b->depth * sizeof(uint32_t));
}

/* The stack shown at time ns into c->next: the leaf's (a sample or block
 * under way), each call under way holding its stack with its marker on
 * top and the leaf above when the leaf's stack extends the call's; a leaf
 * that does not gives way to the innermost call. */
static int compose(struct tr_ctx *c, const struct tr_span *leaf)
{
	const struct stackset *ss = c->t->ss;
	const struct ss_stack *raw = leaf ? &ss->stacks[leaf->stack] : NULL;
	uint32_t marker_base = (uint32_t)ss->nframes, pos = 0, i;
	size_t a;
	int err = 0;

	c->nnext = 0;
	if (c->nactive) {
		const struct ss_stack *inner =
		    &ss->stacks[c->calls[c->active[c->nactive - 1]].stack];

		if (!raw || !extends(raw, inner))
			raw = inner;
	}
	for (a = 0; a < c->nactive && !err; a++) {
		const struct tr_span *call = &c->calls[c->active[a]];
		const struct ss_stack *st = &ss->stacks[call->stack];

		if (st->depth < pos || !extends(raw, st))
			continue;
		for (i = pos; i < st->depth && !err; i++)
			err = push_frame(&c->next, &c->nnext, &c->next_cap, raw->frames[i]);
		if (!err)
			err = push_frame(&c->next, &c->nnext, &c->next_cap,
					 marker_base + (uint32_t)call->marker);
		pos = st->depth;
	}
	for (i = pos; raw && i < raw->depth && !err; i++)
		err = push_frame(&c->next, &c->nnext, &c->next_cap, raw->frames[i]);
	return err;
}

static void put_frame_event(struct tr_ctx *c, const struct tl_thread *th, char ph, uint32_t f,
			    uint64_t ns)
{
	const struct stackset *ss = c->t->ss;
	struct jsonw *w = &c->w;
	bool marker = f >= ss->nframes;
	char phs[2] = {ph, 0};

	jsonw_break(w);
	jsonw_object(w);
	jsonw_key_str(w, "ph", phs);
	jsonw_key_str(w, "name", marker ? marker_names[f - ss->nframes] : ss->frames[f].name);
	jsonw_key_str(w, "cat", marker ? "gpu" : framename_kind(ss->frames[f].kind));
	jsonw_key(w, "ts");
	jsonw_double(w, us_after(c, ns));
	jsonw_key_u64(w, "pid", th->pid);
	jsonw_key_u64(w, "tid", th->tid);
	jsonw_end(w);
}

/* From the open frames to c->next at time ns: end the frames above their
 * common prefix, innermost first, then begin the new ones. */
static int switch_to(struct tr_ctx *c, const struct tl_thread *th, uint64_t ns)
{
	size_t common = 0;
	uint32_t *tmp;
	size_t t;

	while (common < c->nopen && common < c->nnext && c->open[common] == c->next[common])
		common++;
	for (t = c->nopen; t-- > common;)
		put_frame_event(c, th, 'E', c->open[t], ns);
	for (t = common; t < c->nnext; t++)
		put_frame_event(c, th, 'B', c->next[t], ns);
	tmp = c->open, c->open = c->next, c->next = tmp;
	t = c->open_cap, c->open_cap = c->next_cap, c->next_cap = t;
	c->nopen = c->nnext;
	return 0;
}

static const char *leaf_name(const struct tr_ctx *c, uint32_t stack)
{
	const struct ss_stack *st = &c->t->ss->stacks[stack];

	return st->depth ? c->t->ss->frames[st->frames[st->depth - 1]].name : "";
}

/* Memory events up to (not including) ns, as instants. */
static void put_instants(struct tr_ctx *c, size_t ti, size_t *ev, uint64_t ns)
{
	const struct tl_thread *th = &c->t->threads[ti];
	struct jsonw *w = &c->w;

	for (; *ev < c->g.first[ti + 1]; (*ev)++) {
		const struct tl_event *e = &c->t->events[c->g.order[*ev]];

		if (e->start_ns >= ns)
			return;
		if (c->role_of[e->type] != TR_INSTANT)
			continue;
		jsonw_break(w);
		jsonw_object(w);
		jsonw_key_str(w, "ph", "i");
		jsonw_key_str(w, "s", "t");
		jsonw_key_str(w, "name", c->t->types[e->type]);
		jsonw_key_str(w, "cat", c->t->types[e->type]);
		jsonw_key(w, "ts");
		jsonw_double(w, us_after(c, e->start_ns));
		jsonw_key_u64(w, "pid", th->pid);
		jsonw_key_u64(w, "tid", th->tid);
		jsonw_key(w, "args");
		jsonw_object(w);
		jsonw_key_u64(w, "bytes", e->weight);
		jsonw_key_str(w, "leaf", leaf_name(c, e->stack));
		jsonw_end(w);
		jsonw_end(w);
	}
}

/* The calls under way at ns, in start order. */
static int update_active(struct tr_ctx *c, size_t *next_call, uint64_t ns)
{
	size_t a, n = 0;

	for (a = 0; a < c->nactive; a++)
		if (c->calls[c->active[a]].end > ns)
			c->active[n++] = c->active[a];
	c->nactive = n;
	for (; *next_call < c->ncalls && c->calls[*next_call].start <= ns; (*next_call)++) {
		if (c->calls[*next_call].end <= ns)
			continue;
		if (array_grow((void **)&c->active, &c->active_cap, c->nactive + 1,
			       sizeof(*c->active)))
			return -ENOMEM;
		c->active[c->nactive++] = *next_call;
	}
	return 0;
}

static int put_thread_frames(struct tr_ctx *c, size_t ti)
{
	const struct tl_thread *th = &c->t->threads[ti];
	size_t b, leaf = 0, call = 0, ev = c->g.first[ti];
	int err = collect(c, ti);

	c->nopen = c->nactive = 0;
	for (b = 0; b < c->nbounds && !err; b++) {
		uint64_t ns = c->bounds[b];
		const struct tr_span *l;

		while (leaf < c->nleaves && c->leaves[leaf].end <= ns)
			leaf++;
		l = leaf < c->nleaves && c->leaves[leaf].start <= ns ? &c->leaves[leaf] : NULL;
		if (!(err = update_active(c, &call, ns)) && !(err = compose(c, l))) {
			put_instants(c, ti, &ev, ns);
			err = switch_to(c, th, ns);
		}
	}
	put_instants(c, ti, &ev, UINT64_MAX);
	return err;
}

/* A process is named after its main thread (tid == pid), when the
 * timeline has it. */
static const char *process_name(const struct tr_ctx *c, const struct tl_thread *th)
{
	uint64_t v;

	if (hashmap_get(&c->g.main_of, th->pid, &v))
		return c->t->threads[v].name;
	return th->name;
}

static void put_meta_event(struct tr_ctx *c, const struct tl_thread *th, const char *name,
			   const char *value, uint64_t index)
{
	struct jsonw *w = &c->w;

	jsonw_break(w);
	jsonw_object(w);
	jsonw_key_str(w, "ph", "M");
	jsonw_key_str(w, "name", name);
	jsonw_key_u64(w, "pid", th->pid);
	jsonw_key_u64(w, "tid", th->tid);
	jsonw_key(w, "args");
	jsonw_object(w);
	if (value)
		jsonw_key_str(w, "name", value);
	else
		jsonw_key_u64(w, "sort_index", index);
	jsonw_end(w);
	jsonw_end(w);
}

static void put_metadata(struct tr_ctx *c)
{
	const struct tlset *t = c->t;
	struct hashmap named;
	uint64_t v;
	size_t i;

	hashmap_init(&named);
	for (i = 0; i < t->nthreads; i++) {
		const struct tl_thread *th = &t->threads[i];
		const char *name = tlset_thread_label(th);

		if (!hashmap_get(&named, th->pid, &v)) {
			put_meta_event(c, th, "process_name", process_name(c, th), 0);
			if (hashmap_put(&named, th->pid, 1))
				c->w.b.failed = true;
		}
		put_meta_event(c, th, "thread_name", name, 0);
		/* The main thread first, the others in the timeline's order. */
		put_meta_event(c, th, "thread_sort_index", NULL, th->tid == th->pid ? 0 : i + 1);
	}
	hashmap_free(&named);
}

static void put_other_data(struct tr_ctx *c)
{
	struct jsonw *w = &c->w;

	jsonw_key(w, "otherData");
	jsonw_object(w);
	jsonw_key_str(w, "producer", "profd");
	jsonw_key_u64(w, "startTimeNs", c->g.start_ns);
	jsonw_key_u64(w, "rateHz", c->t->rate_hz);
	jsonw_key_u64(w, "droppedEvents", c->t->dropped);
	jsonw_end(w);
}

static int put_file(struct tr_ctx *c, struct buf *out)
{
	struct jsonw *w = &c->w;
	size_t i;
	int err = 0;

	jsonw_init_style(w, 0, JSONW_COMPACT);
	jsonw_object(w);
	jsonw_key_str(w, "displayTimeUnit", "ms");
	put_other_data(c);
	jsonw_break(w);
	jsonw_key(w, "traceEvents");
	jsonw_array(w);
	put_metadata(c);
	for (i = 0; i < c->t->nthreads && !err; i++)
		err = put_thread_frames(c, i);
	jsonw_end(w);
	jsonw_end(w);
	if (err) {
		jsonw_free(w);
		return err;
	}
	return jsonw_finish(w, out);
}

int render_trace(const struct tlset *t, struct buf *out)
{
	struct tr_ctx c = {.t = t};
	int err;

	map_types(&c);
	c.period_ns = 1000000000ull / (t->rate_hz ? t->rate_hz : 99);
	err = tlset_threads_init(&c.g, t);
	if (!err)
		err = put_file(&c, out);
	tlset_threads_free(&c.g);
	free(c.leaves);
	free(c.calls);
	free(c.bounds);
	free(c.open);
	free(c.next);
	free(c.active);
	return err;
}
