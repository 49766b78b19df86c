#include "render_gecko.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "framename.h"
#include "hashmap.h"
#include "jsonw.h"

/* Categories, by what a frame is; index = position here. */
enum gk_category { GK_OTHER, GK_PYTHON, GK_NATIVE, GK_KERNEL, GK_GPU, GK_WAIT, GK_NCATS };

static const struct {
	const char *name, *color;
} categories[GK_NCATS] = {
    [GK_OTHER] = {"Other", "grey"},   [GK_PYTHON] = {"Python", "yellow"},
    [GK_NATIVE] = {"Native", "blue"}, [GK_KERNEL] = {"Kernel", "orange"},
    [GK_GPU] = {"GPU", "green"},      [GK_WAIT] = {"Off-CPU", "purple"},
};

/* What a non-CPU event becomes: marker name (string index), data.type. */
enum gk_marker { GK_M_OFFCPU, GK_M_CUDA, GK_M_DRIVER, GK_M_MEMORY, GK_NMARKERS };

static const struct {
	const char *type_name, *marker, *data_type;
	enum gk_category cat;
	bool interval;
} marker_kinds[GK_NMARKERS] = {
    [GK_M_OFFCPU] = {"off-cpu", "off-CPU", "OffCPU", GK_WAIT, true},
    [GK_M_CUDA] = {"cuda", "CUDA", "CUDA", GK_GPU, true},
    [GK_M_DRIVER] = {"gpu-driver", "GPU driver", "GPUDriver", GK_GPU, true},
    [GK_M_MEMORY] = {"memory", "memory", "Memory", GK_OTHER, false},
};

/* One thread's tables, rebuilt per thread (each has its own). */
struct gk_thread {
	uint32_t *stack_prefix, *stack_frame; /* prefix: index + 1, 0 = root */
	size_t nstacks, stacks_cap;
	uint32_t *frames; /* thread frame -> tlset frame id */
	size_t nframes, frames_cap;
	struct hashmap frame_of; /* tlset frame id -> thread frame */
	struct hashmap node_of;	 /* (prefix, frame) -> stack + 1, probed */
	struct hashmap stack_of; /* tlset stack -> thread stack */
	uint32_t *ev_stack;	 /* per event of the thread: its stack */
};

struct gk_ctx {
	const struct tlset *t;
	struct jsonw w;
	int marker_of[TLSET_MAX_TYPES]; /* tlset type -> enum gk_marker, -1 cpu/other */
	int cpu_type;			/* tlset type of "cpu", or -1 */
	struct tlset_threads g; /* the events by thread */
	struct gk_thread th;
};

static enum gk_category category_of(uint32_t kind)
{
	switch (kind) {
	case FRAME_PYTHON:
		return GK_PYTHON;
	case FRAME_NATIVE:
		return GK_NATIVE;
	case FRAME_KERNEL:
		return GK_KERNEL;
	case FRAME_GPU:
		return GK_GPU;
	case FRAME_WAIT:
		return GK_WAIT;
	default:
		return GK_OTHER;
	}
}

static void map_types(struct gk_ctx *c)
{
	uint32_t i;
	int m;

	c->cpu_type = -1;
	for (i = 0; i < TLSET_MAX_TYPES; i++)
		c->marker_of[i] = -1;
	for (i = 0; i < c->t->ntypes; i++) {
		if (!strcmp(c->t->types[i], "cpu"))
			c->cpu_type = (int)i;
		for (m = 0; m < GK_NMARKERS; m++)
			if (!strcmp(c->t->types[i], marker_kinds[m].type_name))
				c->marker_of[i] = m;
	}
}

static void thread_reset(struct gk_thread *th)
{
	free(th->stack_prefix);
	free(th->stack_frame);
	free(th->frames);
	free(th->ev_stack);
	hashmap_free(&th->frame_of);
	hashmap_free(&th->node_of);
	hashmap_free(&th->stack_of);
	memset(th, 0, sizeof(*th));
}

static int64_t thread_frame(struct gk_thread *th, uint32_t id)
{
	uint64_t v;

	if (hashmap_get(&th->frame_of, id, &v))
		return (int64_t)v;
	if (array_grow((void **)&th->frames, &th->frames_cap, th->nframes + 1,
		       sizeof(*th->frames)) ||
	    hashmap_put(&th->frame_of, id, th->nframes))
		return -ENOMEM;
	th->frames[th->nframes] = id;
	return (int64_t)th->nframes++;
}

static int64_t stack_node(struct gk_thread *th, uint32_t prefix, uint32_t frame)
{
	uint64_t key = hash64_mix((uint64_t)prefix << 32 | frame), v;
	size_t cap;

	for (; hashmap_get(&th->node_of, key, &v); key++)
		if (th->stack_prefix[v - 1] == prefix && th->stack_frame[v - 1] == frame)
			return (int64_t)(v - 1);
	cap = th->stacks_cap;
	if (array_grow((void **)&th->stack_prefix, &cap, th->nstacks + 1, sizeof(uint32_t)) ||
	    array_grow((void **)&th->stack_frame, &th->stacks_cap, th->nstacks + 1,
		       sizeof(uint32_t)) ||
	    hashmap_put(&th->node_of, key, th->nstacks + 1))
		return -ENOMEM;
	th->stack_prefix[th->nstacks] = prefix;
	th->stack_frame[th->nstacks] = frame;
	return (int64_t)th->nstacks++;
}

/* The thread stack of tlset stack s (leaf node), or -1 for an empty one. */
static int64_t thread_stack(struct gk_ctx *c, uint32_t s)
{
	const struct ss_stack *st = &c->t->ss->stacks[s];
	struct gk_thread *th = &c->th;
	int64_t node = -1, f;
	uint64_t v;
	uint32_t i;

	if (hashmap_get(&th->stack_of, s, &v))
		return (int64_t)v - 1;
	for (i = 0; i < st->depth; i++) {
		if ((f = thread_frame(th, st->frames[i])) < 0)
			return f;
		if ((node = stack_node(th, (uint32_t)(node + 1), (uint32_t)f)) < 0)
			return node;
	}
	if (hashmap_put(&th->stack_of, s, (uint64_t)(node + 1)))
		return -ENOMEM;
	return node;
}

static int build_thread(struct gk_ctx *c, size_t ti)
{
	size_t n = c->g.first[ti + 1] - c->g.first[ti], i;
	int64_t s;

	c->th.ev_stack = malloc((n ? n : 1) * sizeof(uint32_t));
	if (!c->th.ev_stack)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct tl_event *e = &c->t->events[c->g.order[c->g.first[ti] + i]];

		if ((s = thread_stack(c, e->stack)) < -1)
			return (int)s;
		c->th.ev_stack[i] = (uint32_t)(s + 1); /* 0: empty stack */
	}
	return 0;
}

static double ms_after(const struct gk_ctx *c, uint64_t ns)
{
	return ns >= c->g.start_ns ? (double)(ns - c->g.start_ns) / 1e6
				 : -(double)(c->g.start_ns - ns) / 1e6;
}

static void put_stack_ref(struct jsonw *w, uint32_t s)
{
	if (s)
		jsonw_u64(w, s - 1);
	else
		jsonw_null(w);
}

static void put_schema(struct jsonw *w, const char *const *cols, size_t n)
{
	size_t i;

	jsonw_key(w, "schema");
	jsonw_object(w);
	for (i = 0; i < n; i++)
		jsonw_key_u64(w, cols[i], i);
	jsonw_end(w);
	jsonw_key(w, "data");
	jsonw_array(w);
}

static void put_samples(struct gk_ctx *c, size_t ti)
{
	static const char *const cols[] = {"stack", "time", "eventDelay"};
	struct jsonw *w = &c->w;
	size_t i;

	jsonw_break(w);
	jsonw_key(w, "samples");
	jsonw_object(w);
	put_schema(w, cols, 3);
	for (i = c->g.first[ti]; i < c->g.first[ti + 1]; i++) {
		const struct tl_event *e = &c->t->events[c->g.order[i]];

		if ((int)e->type != c->cpu_type)
			continue;
		jsonw_break(w);
		jsonw_array(w);
		put_stack_ref(w, c->th.ev_stack[i - c->g.first[ti]]);
		jsonw_double(w, ms_after(c, e->start_ns));
		jsonw_u64(w, 0);
		jsonw_end(w);
	}
	jsonw_end(w);
	jsonw_end(w);
}

static const char *leaf_name(const struct gk_ctx *c, const struct tl_event *e)
{
	const struct ss_stack *st = &c->t->ss->stacks[e->stack];

	return st->depth ? c->t->ss->frames[st->frames[st->depth - 1]].name : "";
}

/* The event's stack as the format carries a marker's: a one-sample
 * "SyncProfile" whose stack indexes the thread's stackTable (the profiler
 * moves it into the shared table it builds, and names it the cause). */
static void put_marker_stack(struct gk_ctx *c, const struct tl_event *e, uint32_t stack)
{
	static const char *const mcols[] = {"name",  "startTime", "endTime",
					    "phase", "category",  "data"};
	static const char *const scols[] = {"stack", "time", "eventDelay"};
	const struct tl_thread *th = &c->t->threads[e->thread];
	struct jsonw *w = &c->w;

	jsonw_key(w, "stack");
	jsonw_object(w);
	jsonw_key_str(w, "name", "SyncProfile");
	jsonw_key(w, "registerTime");
	jsonw_null(w);
	jsonw_key(w, "unregisterTime");
	jsonw_null(w);
	jsonw_key_str(w, "processType", "default");
	jsonw_key_u64(w, "tid", th->tid);
	jsonw_key_u64(w, "pid", th->pid);
	jsonw_key(w, "markers");
	jsonw_object(w);
	put_schema(w, mcols, 6);
	jsonw_end(w);
	jsonw_end(w);
	jsonw_key(w, "samples");
	jsonw_object(w);
	put_schema(w, scols, 3);
	jsonw_array(w);
	jsonw_u64(w, stack - 1);
	jsonw_double(w, ms_after(c, e->start_ns));
	jsonw_u64(w, 0);
	jsonw_end(w);
	jsonw_end(w);
	jsonw_end(w);
	jsonw_end(w);
}

static void put_marker_data(struct gk_ctx *c, const struct tl_event *e, int m, uint32_t stack)
{
	struct jsonw *w = &c->w;

	jsonw_object(w);
	jsonw_key_str(w, "type", marker_kinds[m].data_type);
	jsonw_key_str(w, "leaf", leaf_name(c, e));
	jsonw_key_u64(w, marker_kinds[m].interval ? "durationNs" : "bytes", e->weight);
	if (stack)
		put_marker_stack(c, e, stack);
	jsonw_end(w);
}

static void put_marker(struct gk_ctx *c, const struct tl_event *e, int m, uint32_t stack)
{
	struct jsonw *w = &c->w;
	bool interval = marker_kinds[m].interval;

	jsonw_break(w);
	jsonw_array(w);
	jsonw_u64(w, (uint64_t)m); /* the marker names open the string table */
	jsonw_double(w, ms_after(c, e->start_ns));
	if (interval)
		jsonw_double(w, ms_after(c, e->start_ns + e->weight));
	else
		jsonw_null(w);
	jsonw_u64(w, interval ? 1 : 0);
	jsonw_u64(w, marker_kinds[m].cat);
	put_marker_data(c, e, m, stack);
	jsonw_end(w);
}

static void put_markers(struct gk_ctx *c, size_t ti)
{
	static const char *const cols[] = {"name",  "startTime", "endTime",
					   "phase", "category",	 "data"};
	struct jsonw *w = &c->w;
	size_t i;

	jsonw_break(w);
	jsonw_key(w, "markers");
	jsonw_object(w);
	put_schema(w, cols, 6);
	for (i = c->g.first[ti]; i < c->g.first[ti + 1]; i++) {
		const struct tl_event *e = &c->t->events[c->g.order[i]];
		int m = c->marker_of[e->type];

		if (m >= 0)
			put_marker(c, e, m, c->th.ev_stack[i - c->g.first[ti]]);
	}
	jsonw_end(w);
	jsonw_end(w);
}

static void put_stack_table(struct gk_ctx *c)
{
	static const char *const cols[] = {"prefix", "frame"};
	struct jsonw *w = &c->w;
	size_t i;

	jsonw_break(w);
	jsonw_key(w, "stackTable");
	jsonw_object(w);
	put_schema(w, cols, 2);
	for (i = 0; i < c->th.nstacks; i++) {
		jsonw_break(w);
		jsonw_array(w);
		put_stack_ref(w, c->th.stack_prefix[i]);
		jsonw_u64(w, c->th.stack_frame[i]);
		jsonw_end(w);
	}
	jsonw_end(w);
	jsonw_end(w);
}

static void put_frame(struct gk_ctx *c, size_t i)
{
	const struct ss_frame *f = &c->t->ss->frames[c->th.frames[i]];
	struct framename_py py;
	struct jsonw *w = &c->w;

	jsonw_break(w);
	jsonw_array(w);
	jsonw_u64(w, GK_NMARKERS + i); /* its name, after the marker names */
	jsonw_bool(w, false);
	jsonw_u64(w, 0);
	jsonw_null(w);
	if (f->kind == FRAME_PYTHON && framename_python(f->name, &py))
		jsonw_u64(w, py.line);
	else
		jsonw_null(w);
	jsonw_null(w);
	jsonw_u64(w, category_of(f->kind));
	jsonw_u64(w, 0);
	jsonw_end(w);
}

static void put_frame_table(struct gk_ctx *c)
{
	static const char *const cols[] = {"location",	     "relevantForJS", "innerWindowID",
					   "implementation", "line",	      "column",
					   "category",	     "subcategory"};
	struct jsonw *w = &c->w;
	size_t i;

	jsonw_break(w);
	jsonw_key(w, "frameTable");
	jsonw_object(w);
	put_schema(w, cols, 8);
	for (i = 0; i < c->th.nframes; i++)
		put_frame(c, i);
	jsonw_end(w);
	jsonw_end(w);
}

static void put_strings(struct gk_ctx *c)
{
	struct jsonw *w = &c->w;
	size_t i;

	jsonw_break(w);
	jsonw_key(w, "stringTable");
	jsonw_array(w);
	for (i = 0; i < GK_NMARKERS; i++)
		jsonw_str(w, marker_kinds[i].marker);
	for (i = 0; i < c->th.nframes; i++) {
		jsonw_break(w);
		jsonw_str(w, c->t->ss->frames[c->th.frames[i]].name);
	}
	jsonw_end(w);
}

/* A process is named after its main thread (tid == pid), when the
 * timeline has it. */
static const char *process_name(const struct gk_ctx *c, const struct tl_thread *th)
{
	uint64_t v;

	if (hashmap_get(&c->g.main_of, th->pid, &v))
		return c->t->threads[v].name;
	return th->name;
}

static void put_thread_head(struct gk_ctx *c, const struct tl_thread *th)
{
	struct jsonw *w = &c->w;
	char name[96];

	snprintf(name, sizeof(name), "%s (%u)", tlset_thread_label(th), th->tid);
	jsonw_key_str(w, "name", name);
	jsonw_key_str(w, "processType", "default");
	jsonw_key_str(w, "processName", process_name(c, th));
	jsonw_key_u64(w, "pid", th->pid);
	jsonw_key_u64(w, "tid", th->tid);
	jsonw_key_u64(w, "registerTime", 0);
	jsonw_key(w, "unregisterTime");
	jsonw_null(w);
}

static int put_thread(struct gk_ctx *c, size_t ti)
{
	struct jsonw *w = &c->w;
	int err = build_thread(c, ti);

	if (!err) {
		jsonw_break(w);
		jsonw_object(w);
		put_thread_head(c, &c->t->threads[ti]);
		put_samples(c, ti);
		put_markers(c, ti);
		put_stack_table(c);
		put_frame_table(c);
		put_strings(c);
		jsonw_end(w);
	}
	thread_reset(&c->th);
	return err;
}

static void put_categories(struct jsonw *w)
{
	size_t i;

	jsonw_key(w, "categories");
	jsonw_array(w);
	for (i = 0; i < GK_NCATS; i++) {
		jsonw_object(w);
		jsonw_key_str(w, "name", categories[i].name);
		jsonw_key_str(w, "color", categories[i].color);
		jsonw_key(w, "subcategories");
		jsonw_array(w);
		jsonw_str(w, "Other");
		jsonw_end(w);
		jsonw_end(w);
	}
	jsonw_end(w);
}

/* How the profiler shows each marker type's fields. */
static void put_marker_schema(struct jsonw *w)
{
	size_t m;

	jsonw_key(w, "markerSchema");
	jsonw_array(w);
	for (m = 0; m < GK_NMARKERS; m++) {
		jsonw_object(w);
		jsonw_key_str(w, "name", marker_kinds[m].data_type);
		jsonw_key(w, "display");
		jsonw_array(w);
		jsonw_str(w, "marker-chart");
		jsonw_str(w, "marker-table");
		jsonw_end(w);
		jsonw_key(w, "data");
		jsonw_array(w);
		jsonw_object(w);
		jsonw_key_str(w, "key", "leaf");
		jsonw_key_str(w, "label", "Leaf frame");
		jsonw_key_str(w, "format", "string");
		jsonw_end(w);
		jsonw_object(w);
		jsonw_key_str(w, "key", marker_kinds[m].interval ? "durationNs" : "bytes");
		jsonw_key_str(w, "label", marker_kinds[m].interval ? "Duration (ns)" : "Bytes");
		jsonw_key_str(w, "format", "integer");
		jsonw_end(w);
		jsonw_end(w);
		jsonw_end(w);
	}
	jsonw_end(w);
}

static void put_meta(struct gk_ctx *c)
{
	struct jsonw *w = &c->w;
	uint32_t rate = c->t->rate_hz ? c->t->rate_hz : 99;

	jsonw_key(w, "meta");
	jsonw_object(w);
	jsonw_key_u64(w, "version", GECKO_VERSION);
	jsonw_key(w, "startTime");
	jsonw_double(w, (double)c->g.start_ns / 1e6);
	jsonw_key(w, "shutdownTime");
	jsonw_null(w);
	jsonw_key(w, "interval");
	jsonw_double(w, 1000.0 / rate);
	jsonw_key_u64(w, "processType", 0);
	jsonw_key_str(w, "product", "profd");
	jsonw_key_u64(w, "stackwalk", 1);
	jsonw_key_u64(w, "debug", 0);
	jsonw_key_u64(w, "gcpoison", 0);
	jsonw_key_u64(w, "asyncstack", 0);
	jsonw_key_bool(w, "presymbolicated", true);
	jsonw_key_u64(w, "droppedEvents", c->t->dropped);
	jsonw_break(w);
	put_categories(w);
	jsonw_break(w);
	put_marker_schema(w);
	jsonw_end(w);
}

static int put_file(struct gk_ctx *c, struct buf *out)
{
	struct jsonw *w = &c->w;
	size_t i;
	int err = 0;

	jsonw_init_style(w, 0, JSONW_COMPACT);
	jsonw_object(w);
	put_meta(c);
	jsonw_break(w);
	jsonw_key(w, "libs");
	jsonw_array(w);
	jsonw_end(w);
	jsonw_key(w, "pausedRanges");
	jsonw_array(w);
	jsonw_end(w);
	jsonw_key(w, "processes");
	jsonw_array(w);
	jsonw_end(w);
	jsonw_break(w);
	jsonw_key(w, "threads");
	jsonw_array(w);
	for (i = 0; i < c->t->nthreads && !err; i++)
		err = put_thread(c, i);
	jsonw_end(w);
	jsonw_end(w);
	if (err) {
		jsonw_free(w);
		return err;
	}
	return jsonw_finish(w, out);
}

int render_gecko(const struct tlset *t, struct buf *out)
{
	struct gk_ctx c = {.t = t};
	int err;

	map_types(&c);
	err = tlset_threads_init(&c.g, t);
	if (!err)
		err = put_file(&c, out);
	tlset_threads_free(&c.g);
	return err;
}
