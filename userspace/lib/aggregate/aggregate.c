#include "aggregate.h"
#include "aggregate_int.h"
#include "array.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name, *unit;
} types[AGG_TYPE_MAX] = {
	[AGG_CPU] = { "cpu", "samples" },
	[AGG_GPU_DRIVER] = { "gpu-driver", "nanoseconds" },
	[AGG_GPU_DRIVER_CALLS] = { "gpu-driver-calls", "calls" },
	[AGG_CUDA] = { "cuda", "nanoseconds" },
	[AGG_CUDA_CALLS] = { "cuda-calls", "calls" },
	[AGG_OFFCPU] = { "off-cpu", "nanoseconds" },
	[AGG_WALL] = { "wall", "nanoseconds" },
	[AGG_GIL] = { "gil", "samples" },
	[AGG_MEMORY] = { "memory", "bytes" },
	[AGG_MMAP] = { "mmap", "bytes" },
	[AGG_COMM] = { "comm", "nanoseconds" },
	[AGG_COMM_CALLS] = { "comm-calls", "calls" },
};

int aggregate_type_from_name(const char *name)
{
	int i;

	for (i = 0; i < AGG_TYPE_MAX; i++)
		if (!strcmp(types[i].name, name))
			return i;
	return -1;
}

const char *aggregate_type_name(int type)
{
	return type >= 0 && type < AGG_TYPE_MAX ? types[type].name : "?";
}

const char *aggregate_type_unit(int type)
{
	return type >= 0 && type < AGG_TYPE_MAX ? types[type].unit : "?";
}

/* Every type's name, from the table (a list kept by hand fell behind it),
 * made once whichever thread asks first. */
static char type_names[256];
static pthread_once_t type_names_once = PTHREAD_ONCE_INIT;

static void make_type_names(void)
{
	size_t n = 0;
	int i;

	for (i = 0; i < AGG_TYPE_MAX; i++)
		n += (size_t)snprintf(type_names + n, n < sizeof(type_names) ? sizeof(type_names) - n : 0,
				      "%s%s", i ? ", " : "", types[i].name);
}

const char *aggregate_type_names(void)
{
	pthread_once(&type_names_once, make_type_names);
	return type_names;
}

int aggregate_init(struct aggregate *a, uint64_t bucket_ns)
{
	memset(a, 0, sizeof(*a));
	a->bucket_ns = bucket_ns ? bucket_ns : 10ull * 1000000000ull;
	a->max_stacks_per_proc = 200000;
	timeline_budget_init(&a->timeline);
	a->dict = stackset_new();
	return a->dict ? 0 : -ENOMEM;
}

void aggregate_free(struct aggregate *a)
{
	stackset_free(a->dict);
	a->dict = NULL;
}

static void proc_profile_free(struct proc *p)
{
	struct proc_profile *pp = p->profile;
	size_t i;

	if (!pp)
		return;
	for (i = 0; i < pp->nstacks; i++)
		free(pp->stacks[i].frames);
	free(pp->stacks);
	free(pp->cells);
	free(pp->written);
	timeline_free(pp->timeline);
	hashmap_free(&pp->stack_index);
	hashmap_free(&pp->cell_index);
	free(pp);
	p->profile = NULL;
}

int aggregate_own_procs(struct proctable *pt)
{
	static const struct proc_owner owner = { .on_free = proc_profile_free };

	return proctable_add_owner(pt, &owner);
}

int64_t aggregate_frame(struct aggregate *a, uint32_t kind, const char *name)
{
	return stackset_intern(a->dict, kind, name);
}

/* The dictionary's module for path (NULL: none, 0), or -ENOMEM. */
static int64_t module_of(struct aggregate *a, const char *path, const char *build_id)
{
	return path ? stackset_module(a->dict, path, build_id) : 0;
}

int64_t aggregate_frame_in(struct aggregate *a, uint32_t kind, const char *name, const char *path,
			   const char *build_id)
{
	int64_t mod = module_of(a, path, build_id);

	return mod < 0 ? mod : stackset_intern_in(a->dict, kind, name, (uint32_t)mod);
}

int64_t aggregate_frame_own(struct aggregate *a, uint32_t kind, const char *name, const char *path,
			    const char *build_id)
{
	int64_t mod = module_of(a, path, build_id);

	return mod < 0 ? mod : stackset_add_unindexed(a->dict, kind, name, (uint32_t)mod);
}

int aggregate_rename_frame(struct aggregate *a, uint32_t id, uint32_t kind, const char *name,
			   const char *path, const char *build_id)
{
	int64_t mod = module_of(a, path, build_id);

	return mod < 0 ? (int)mod : stackset_rename(a->dict, id, kind, name, (uint32_t)mod);
}

static struct proc_profile *profile_of(struct proc *p)
{
	if (!p->profile)
		p->profile = calloc(1, sizeof(*p->profile));
	return p->profile;
}

static int64_t find_stack(const struct proc_profile *pp, uint64_t *key, const uint32_t *frames,
			  uint32_t depth)
{
	uint64_t v;

	/* Probe successive keys: a 64-bit hash collision must not merge. */
	for (; hashmap_get(&pp->stack_index, *key, &v); (*key)++) {
		const struct agg_stack *st = &pp->stacks[v - 1];

		if (st->depth == depth && !memcmp(st->frames, frames, depth * sizeof(*frames)))
			return (int64_t)(v - 1);
	}
	return -ENOENT;
}

/* A process with too many distinct stacks (a JIT, a fuzzer) keeps
 * counting, under one stack that says so: bounded memory, nothing lost. */
static int64_t overflow_stack(struct aggregate *a, struct proc *p)
{
	struct proc_profile *pp = p->profile;
	uint64_t key, v;
	int64_t id = aggregate_frame(a, FRAME_UNKNOWN, "[stack table full]");
	uint32_t frame;

	if (id < 0)
		return id;
	frame = (uint32_t)id;
	key = hash64_bytes(&frame, sizeof(frame), 1);
	a->stacks_overflow++;
	for (; hashmap_get(&pp->stack_index, key, &v); key++) {
		const struct agg_stack *st = &pp->stacks[v - 1];

		if (st->depth == 1 && st->frames[0] == frame)
			return (int64_t)(v - 1);
	}
	/* The one stack past the cap. */
	if (array_grow((void **)&pp->stacks, &pp->stacks_cap, pp->nstacks + 1, sizeof(*pp->stacks)))
		return -ENOMEM;
	pp->stacks[pp->nstacks].frames = malloc(sizeof(uint32_t));
	if (!pp->stacks[pp->nstacks].frames)
		return -ENOMEM;
	pp->stacks[pp->nstacks].frames[0] = frame;
	pp->stacks[pp->nstacks].depth = 1;
	pp->stacks[pp->nstacks].memo = (struct history_stack_memo){ 0 };
	if (hashmap_put(&pp->stack_index, key, pp->nstacks + 1)) {
		free(pp->stacks[pp->nstacks].frames);
		return -ENOMEM;
	}
	return (int64_t)pp->nstacks++;
}

int64_t aggregate_stack(struct aggregate *a, struct proc *p, const uint32_t *frames,
			uint32_t depth)
{
	struct proc_profile *pp = profile_of(p);
	uint64_t key = hash64_bytes(frames, depth * sizeof(*frames), depth);
	struct agg_stack *st;
	int64_t idx;

	if (!pp)
		return -ENOMEM;
	idx = find_stack(pp, &key, frames, depth);
	if (idx >= 0)
		return idx;
	if (pp->nstacks >= a->max_stacks_per_proc)
		return overflow_stack(a, p);
	if (array_grow((void **)&pp->stacks, &pp->stacks_cap, pp->nstacks + 1, sizeof(*st)))
		return -ENOMEM;
	st = &pp->stacks[pp->nstacks];
	st->frames = malloc((depth ? depth : 1) * sizeof(uint32_t));
	if (!st->frames)
		return -ENOMEM;
	memcpy(st->frames, frames, depth * sizeof(uint32_t));
	st->depth = depth;
	st->memo = (struct history_stack_memo){ 0 };
	if (depth > a->max_depth)
		a->max_depth = depth;
	if (hashmap_put(&pp->stack_index, key, pp->nstacks + 1)) {
		free(st->frames);
		return -ENOMEM;
	}
	a->stacks++;
	return (int64_t)pp->nstacks++;
}

uint64_t agg_cell_key(uint32_t bucket, uint32_t stack, uint32_t tid, int type)
{
	return hash64_mix(((uint64_t)bucket << 32 | stack) ^ hash64_mix(tid | (uint64_t)type << 32));
}

/* Thread root frame "name (tid)" interned in the global dictionary;
 * "name, before exec (tid)" for what the process did before its exec. */
static int64_t thread_frame(struct aggregate *a, uint32_t tid, const char *name, bool before_exec)
{
	char label[96];

	snprintf(label, sizeof(label), "%.63s%s (%u)", name && *name ? name : "?",
		 before_exec ? VIEW_BEFORE_EXEC : "", tid);
	return aggregate_frame(a, FRAME_ROOT, label);
}

/* The name part of a thread root frame's label, and its length. */
static const char *thread_name_of(const struct aggregate *a, uint32_t frame, size_t *len)
{
	const char *label = a->dict->frames[frame].name;
	uint32_t tid;

	if (!stackset_root_tid(label, len, &tid))
		*len = strlen(label);
	return label;
}

/* The process has exec'd (p->exec_ns, p->comm: the new program's): its
 * cells counted so far are the old program's (the parent's, for a
 * process between fork and exec), unless their thread has the new name
 * and they may be newer than the exec (the rings are read in turn, so a
 * sample after the exec can come before its event).  Those not yet in
 * history are labelled so; a sample older than the exec that comes
 * later is labelled as it is counted (aggregate_add). */
void aggregate_exec(struct aggregate *a, struct proc *p)
{
	struct proc_profile *pp = p->profile;
	size_t i, len, clen = strlen(p->comm);

	for (i = 0; pp && i < pp->ncells; i++) {
		struct agg_cell *c = &pp->cells[i];
		uint64_t end = ((uint64_t)c->bucket + 1) * a->bucket_ns;
		const char *name = thread_name_of(a, c->thread_frame, &len);
		char old[64];
		int64_t tf;

		if (c->flushed || view_before_exec(name, len) ||
		    (end > p->exec_ns && c->tid == p->pid && len == clen && !memcmp(name, p->comm, len)))
			continue;
		snprintf(old, sizeof(old), "%.*s", (int)len, name);
		tf = thread_frame(a, c->tid, old, true);
		if (tf >= 0)
			c->thread_frame = (uint32_t)tf;
	}
}

/* The event on the process's timeline too: the one place every weight
 * of every type passes with its time and thread. */
static void record_event(struct aggregate *a, struct proc_profile *pp, const struct agg_cell *c,
			 int type, uint64_t realtime_ns, uint64_t weight)
{
	struct timeline_event e = {
		.start_ns = timeline_start(type, realtime_ns, weight),
		.weight = weight,
		.tid = c->tid,
		.stack = c->stack,
		.thread_frame = c->thread_frame,
		.type = (uint8_t)type,
	};

	timeline_add(&a->timeline, &pp->timeline, &e);
}

int aggregate_count(struct aggregate *a, struct proc *p, uint32_t stack_idx, uint32_t tid,
		    const char *thread_name, uint64_t realtime_ns, uint64_t weight)
{
	return aggregate_add(a, p, AGG_CPU, stack_idx, tid, thread_name, realtime_ns, weight);
}

int aggregate_add(struct aggregate *a, struct proc *p, int type, uint32_t stack_idx, uint32_t tid,
		  const char *thread_name, uint64_t realtime_ns, uint64_t weight)
{
	struct proc_profile *pp = profile_of(p);
	uint32_t bucket = (uint32_t)(realtime_ns / a->bucket_ns);
	uint64_t key = agg_cell_key(bucket, stack_idx, tid, type), v;
	struct agg_cell *c;
	int64_t tf;

	if (!pp)
		goto nomem;
	/* Probe: the 64-bit cell key may collide; the cell holds the truth. */
	for (; hashmap_get(&pp->cell_index, key, &v); key++) {
		c = &pp->cells[v - 1];
		if (c->bucket == bucket && c->stack == stack_idx && c->tid == tid &&
		    c->type == (uint32_t)type) {
			c->count += weight;
			goto counted;
		}
	}
	tf = thread_frame(a, tid, thread_name, realtime_ns < p->exec_ns);
	if (tf < 0 || array_grow((void **)&pp->cells, &pp->cells_cap, pp->ncells + 1, sizeof(*c)))
		goto nomem;
	c = &pp->cells[pp->ncells];
	c->bucket = bucket;
	c->stack = stack_idx;
	c->tid = tid;
	c->thread_frame = (uint32_t)tf;
	c->count = weight;
	c->flushed = 0;
	c->type = (uint32_t)type;
	c->_pad = 0;
	if (hashmap_put(&pp->cell_index, key, pp->ncells + 1))
		goto nomem;
	pp->ncells++;
	a->cells++;
counted:
	pp->totals[type] += weight;
	if (timeline_keeps(type))
		record_event(a, pp, c, type, realtime_ns, weight);
	/* Every type's: a process that only ever blocked (no CPU sample at
	 * 99 Hz) still has a span, which history lists it by. */
	if (!p->first_ns || realtime_ns < p->first_ns)
		p->first_ns = realtime_ns;
	if (realtime_ns > p->last_ns)
		p->last_ns = realtime_ns;
	if (type != AGG_CPU) {
		p->events++; /* samples describe the CPU profile */
		return 0;
	}
	a->samples += weight;
	p->samples += weight;
	return 0;
nomem:
	a->alloc_failed += weight;
	return -ENOMEM;
}

uint64_t aggregate_total(const struct proc *p, int type)
{
	return p->profile && type >= 0 && type < AGG_TYPE_MAX ? p->profile->totals[type] : 0;
}

/* Translate a global frame id into out's id, caching per dump. */
static int64_t out_frame(struct aggregate *a, struct stackset *out, struct hashmap *map, uint32_t g)
{
	uint64_t v;
	int64_t id;

	if (hashmap_get(map, g, &v))
		return (int64_t)v;
	id = stackset_copy_frame(out, a->dict, g);
	if (id >= 0 && hashmap_put(map, g, (uint64_t)id))
		return -ENOMEM;
	return id;
}

static bool cell_in_window(const struct aggregate *a, const struct agg_cell *c,
			   const struct agg_query *q)
{
	uint64_t start = (uint64_t)c->bucket * a->bucket_ns, end = start + a->bucket_ns;

	if (c->type != (uint32_t)q->type)
		return false;
	if (q->since_ns && end <= q->since_ns)
		return false;
	if (q->until_ns && start >= q->until_ns)
		return false;
	return true;
}

static int dump_cell(struct aggregate *a, const struct proc *p, const struct agg_cell *c,
		     const struct agg_query *q, struct stackset *out, struct hashmap *map,
		     uint32_t *ids, int64_t proc_frame)
{
	const struct agg_stack *st = &p->profile->stacks[c->stack];
	uint64_t count = q->flags & AGG_UNFLUSHED ? c->count - c->flushed : c->count;
	uint32_t n = 0, i;
	size_t len;
	const char *name = thread_name_of(a, c->thread_frame, &len);
	int64_t id;

	if (!count || !view_keeps_thread(q->flags, name, len))
		return 0;
	if (q->flags & AGG_PROCESS_ROOT)
		ids[n++] = (uint32_t)proc_frame;
	if (q->flags & AGG_BY_THREAD) {
		if ((id = out_frame(a, out, map, c->thread_frame)) < 0)
			return (int)id;
		ids[n++] = (uint32_t)id;
	}
	for (i = 0; i < st->depth; i++) {
		/* GPU leaves stay: they say what the Python line waited for. */
		if (!view_keeps(q->flags, a->dict->frames[st->frames[i]].kind))
			continue;
		if ((id = out_frame(a, out, map, st->frames[i])) < 0)
			return (int)id;
		ids[n++] = (uint32_t)id;
	}
	return stackset_add(out, ids, n, q->scale ? count * q->scale : count);
}

static int64_t proc_root(const struct proc *p, struct stackset *out)
{
	char label[64];

	snprintf(label, sizeof(label), "%s (%u)", p->comm, p->pid);
	return stackset_intern(out, FRAME_ROOT, label);
}

int aggregate_dump_stack(struct aggregate *a, const struct proc *p, const struct agg_query *q,
			 uint32_t stack_idx, uint32_t tid, const char *thread_name, uint64_t weight,
			 struct stackset *out)
{
	struct agg_cell c = { .stack = stack_idx, .tid = tid, .count = weight };
	struct agg_query one = *q;
	int64_t tf = thread_frame(a, tid, thread_name, false), root = 0;
	struct hashmap map;
	uint32_t *ids;
	int err;

	if (!p->profile || stack_idx >= p->profile->nstacks || tf < 0)
		return -EINVAL;
	if ((q->flags & AGG_PROCESS_ROOT) && (root = proc_root(p, out)) < 0)
		return (int)root;
	ids = malloc((a->max_depth + 2) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	c.thread_frame = (uint32_t)tf;
	one.flags &= ~AGG_UNFLUSHED;
	one.scale = 0;
	hashmap_init(&map);
	err = dump_cell(a, p, &c, &one, out, &map, ids, root);
	hashmap_free(&map);
	free(ids);
	return err;
}

int aggregate_dump(struct aggregate *a, const struct proc *p, const struct agg_query *q,
		   struct stackset *out)
{
	struct hashmap map;
	uint32_t *ids = NULL;
	int64_t proc_frame = 0;
	size_t i;
	int err = 0;

	if (!p->profile)
		return 0;
	ids = malloc((a->max_depth + 2) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	hashmap_init(&map);
	if (q->flags & AGG_PROCESS_ROOT) {
		proc_frame = proc_root(p, out);
		if (proc_frame < 0)
			err = (int)proc_frame;
	}
	for (i = 0; !err && i < p->profile->ncells; i++) {
		const struct agg_cell *c = &p->profile->cells[i];

		if (cell_in_window(a, c, q))
			err = dump_cell(a, p, c, q, out, &map, ids, proc_frame);
	}
	hashmap_free(&map);
	free(ids);
	return err;
}
