#include "tlset.h"
#include "array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tlset *tlset_new(void)
{
	struct tlset *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->ss = stackset_new();
	if (!t->ss) {
		free(t);
		return NULL;
	}
	return t;
}

void tlset_free(struct tlset *t)
{
	size_t i;

	if (!t)
		return;
	stackset_free(t->ss);
	for (i = 0; i < t->ntypes; i++)
		free(t->types[i]);
	for (i = 0; i < t->nthreads; i++) {
		free(t->threads[i].name);
		free(t->threads[i].pyname);
	}
	free(t->threads);
	free(t->events);
	free(t);
}

int tlset_type(struct tlset *t, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->ntypes; i++)
		if (!strcmp(t->types[i], name))
			return (int)i;
	if (t->ntypes == TLSET_MAX_TYPES)
		return -ENOSPC;
	t->types[t->ntypes] = strdup(name);
	if (!t->types[t->ntypes])
		return -ENOMEM;
	return (int)t->ntypes++;
}

/* Threads are few (a process's threads): a linear search is enough. */
int64_t tlset_thread(struct tlset *t, uint32_t pid, uint32_t tid, const char *name)
{
	struct tl_thread *th;
	size_t i;

	for (i = 0; i < t->nthreads; i++) {
		th = &t->threads[i];
		if (th->pid != pid || th->tid != tid)
			continue;
		if (name && *name && strcmp(th->name, name) && stackset_set_str(&th->name, name))
			return -ENOMEM;
		return (int64_t)i;
	}
	if (array_grow((void **)&t->threads, &t->threads_cap, t->nthreads + 1, sizeof(*th)))
		return -ENOMEM;
	th = &t->threads[t->nthreads];
	th->pid = pid;
	th->tid = tid;
	th->pyname = NULL;
	th->name = strdup(name ? name : "");
	if (!th->name)
		return -ENOMEM;
	return (int64_t)t->nthreads++;
}

const char *tlset_thread_label(const struct tl_thread *th)
{
	if (th->pyname && *th->pyname)
		return th->pyname;
	return th->name && *th->name ? th->name : "?";
}

int tlset_add(struct tlset *t, const struct tl_event *e)
{
	if (e->thread >= t->nthreads || e->stack >= t->ss->nstacks || e->type >= t->ntypes)
		return -EINVAL;
	if (array_grow((void **)&t->events, &t->events_cap, t->nevents + 1, sizeof(*e)))
		return -ENOMEM;
	t->events[t->nevents++] = *e;
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct tl_event *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

void tlset_sort(struct tlset *t)
{
	if (t->nevents > 1)
		qsort(t->events, t->nevents, sizeof(*t->events), by_time);
}

/* A counting sort by thread: stable, so each thread keeps time order. */
int tlset_threads_init(struct tlset_threads *g, const struct tlset *t)
{
	size_t i, *next;

	memset(g, 0, sizeof(*g));
	hashmap_init(&g->main_of);
	g->first = calloc(t->nthreads + 1, sizeof(*g->first));
	g->order = malloc((t->nevents ? t->nevents : 1) * sizeof(*g->order));
	next = calloc(t->nthreads + 1, sizeof(*next));
	if (!g->first || !g->order || !next) {
		free(next);
		return -ENOMEM;
	}
	for (i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == t->threads[i].pid &&
		    hashmap_put(&g->main_of, t->threads[i].pid, i)) {
			free(next);
			return -ENOMEM;
		}
	for (i = 0; i < t->nevents; i++)
		g->first[t->events[i].thread + 1]++;
	for (i = 0; i < t->nthreads; i++)
		g->first[i + 1] += g->first[i];
	memcpy(next, g->first, t->nthreads * sizeof(*next));
	for (i = 0; i < t->nevents; i++)
		g->order[next[t->events[i].thread]++] = i;
	free(next);
	g->start_ns = t->start_ns;
	if (t->nevents && (!g->start_ns || t->events[0].start_ns < g->start_ns))
		g->start_ns = t->events[0].start_ns;
	return 0;
}

void tlset_threads_free(struct tlset_threads *g)
{
	free(g->first);
	free(g->order);
	hashmap_free(&g->main_of);
	memset(g, 0, sizeof(*g));
}
