/* aggregate_timeline.c: a process's timeline ring copied into a tlset
 * for a dump: events in the window, their stacks as the dump's view shows
 * them (python-only, no kernel), each distinct stack once. */
#include "aggregate.h"
#include "aggregate_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tl_copy {
	struct aggregate *a;
	const struct proc *p;
	const struct agg_query *q;
	struct tlset *out;
	struct hashmap frames; /* global frame id -> out frame id */
	struct hashmap stacks; /* profile stack index -> out stack index */
	uint32_t *ids;
	int types[AGG_TYPE_MAX]; /* enum agg_type -> out type index + 1 */
};

static int64_t copy_frame(struct tl_copy *x, uint32_t g)
{
	uint64_t v;
	int64_t id;

	if (hashmap_get(&x->frames, g, &v))
		return (int64_t)v;
	id = stackset_copy_frame(x->out->ss, x->a->dict, g);
	if (id >= 0 && hashmap_put(&x->frames, g, (uint64_t)id))
		return -ENOMEM;
	return id;
}

/* The out stack of profile stack idx; its count is the events naming it. */
static int64_t copy_stack(struct tl_copy *x, uint32_t idx)
{
	const struct agg_stack *st = &x->p->profile->stacks[idx];
	uint32_t i, n = 0;
	int64_t id;
	uint64_t v;

	if (hashmap_get(&x->stacks, idx, &v)) {
		x->out->ss->stacks[v].count++;
		x->out->ss->total++;
		return (int64_t)v;
	}
	for (i = 0; i < st->depth; i++) {
		if (!view_keeps(x->q->flags, x->a->dict->frames[st->frames[i]].kind))
			continue;
		if ((id = copy_frame(x, st->frames[i])) < 0)
			return id;
		x->ids[n++] = (uint32_t)id;
	}
	id = stackset_add_at(x->out->ss, x->ids, n, 1);
	if (id >= 0 && hashmap_put(&x->stacks, idx, (uint64_t)id))
		return -ENOMEM;
	return id;
}

/* The name part of the event's thread root label "name (tid)". */
static size_t thread_name(const struct tl_copy *x, const struct timeline_event *e, char *name,
			  size_t size)
{
	const char *label = x->a->dict->frames[e->thread_frame].name;
	const char *paren = strrchr(label, '(');
	size_t len = paren && paren > label ? (size_t)(paren - label - 1) : strlen(label);

	if (len >= size)
		len = size - 1;
	memcpy(name, label, len);
	name[len] = '\0';
	return len;
}

/* Its thread as a track: an event older than the process's exec is the
 * old program's ("NAME, before exec"), as in a --by-thread dump. */
static int64_t copy_thread(struct tl_copy *x, const struct timeline_event *e)
{
	char name[64 + sizeof(VIEW_BEFORE_EXEC)];
	size_t len = thread_name(x, e, name, 64);

	if (e->start_ns < x->p->exec_ns && !view_before_exec(name, len))
		snprintf(name + len, sizeof(name) - len, "%s", VIEW_BEFORE_EXEC);
	return tlset_thread(x->out, x->p->pid, e->tid, name);
}

/* The Python view leaves out what the process did before its exec. */
static bool keeps_event(const struct tl_copy *x, const struct timeline_event *e)
{
	char name[64];
	size_t len = thread_name(x, e, name, sizeof(name));

	return view_keeps_thread(x->q->flags, name, len) &&
	       (!(x->q->flags & VIEW_PYTHON_ONLY) || e->start_ns >= x->p->exec_ns);
}

static int copy_type(struct tl_copy *x, int type)
{
	int t;

	if (x->types[type])
		return x->types[type] - 1;
	t = tlset_type(x->out, aggregate_type_name(type));
	if (t >= 0)
		x->types[type] = t + 1;
	return t;
}

static bool in_window(const struct agg_query *q, const struct timeline_event *e)
{
	return (!q->since_ns ||
		e->start_ns + (e->type == AGG_CPU ? 0 : e->weight) >= q->since_ns) &&
	       (!q->until_ns || e->start_ns < q->until_ns);
}

static int copy_event(struct tl_copy *x, const struct timeline_event *e)
{
	struct tl_event out = {.start_ns = e->start_ns, .weight = e->weight};
	int64_t stack, thread;
	int type;

	if (e->stack >= x->p->profile->nstacks || e->type >= AGG_TYPE_MAX)
		return 0; /* cannot happen: stacks are never dropped */
	if ((stack = copy_stack(x, e->stack)) < 0)
		return (int)stack;
	if ((thread = copy_thread(x, e)) < 0)
		return (int)thread;
	if ((type = copy_type(x, e->type)) < 0)
		return type;
	out.stack = (uint32_t)stack;
	out.thread = (uint32_t)thread;
	out.type = (uint32_t)type;
	return tlset_add(x->out, &out);
}

int aggregate_timeline(struct aggregate *a, const struct proc *p, const struct agg_query *q,
		       struct tlset *out)
{
	struct tl_copy x = {.a = a, .p = p, .q = q, .out = out};
	const struct timeline *tl = p->profile ? p->profile->timeline : NULL;
	uint32_t i;
	int err = 0;

	if (!tl)
		return 0;
	x.ids = malloc((a->max_depth + 1) * sizeof(*x.ids));
	if (!x.ids)
		return -ENOMEM;
	hashmap_init(&x.frames);
	hashmap_init(&x.stacks);
	out->dropped += tl->evicted;
	for (i = 0; i < timeline_count(tl) && !err; i++) {
		const struct timeline_event *e = timeline_at(tl, i);

		if (in_window(q, e) && keeps_event(&x, e))
			err = copy_event(&x, e);
	}
	hashmap_free(&x.frames);
	hashmap_free(&x.stacks);
	free(x.ids);
	return err;
}
