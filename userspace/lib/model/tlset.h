/* tlset: a timeline ready to render or send: what the selected threads
 * did, event by event in time order, each naming a stack of a stackset.
 * The daemon builds one for a timeline dump (aggregate's timeline ring),
 * the protocol carries it, render_gecko draws it. */
#ifndef PROFD_TLSET_H
#define PROFD_TLSET_H

#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "stackset.h"

/* Profile types named by events: at most this many. */
#define TLSET_MAX_TYPES 32

struct tl_thread {
	uint32_t pid, tid;
	char *name;
	/* Python's name of it (threading's), for its track; NULL if none.
	 * The process stays named after its main thread's name. */
	char *pyname;
};

/* One event: a CPU sample (weight 1), or an interval (off-CPU block, CUDA
 * or driver call: weight its ns) starting at start_ns, or a quantity
 * (memory: bytes) at start_ns. */
struct tl_event {
	uint64_t start_ns; /* CLOCK_REALTIME */
	uint64_t weight;   /* in the type's unit */
	uint32_t thread;   /* index into threads */
	uint32_t stack;	   /* index into ss->stacks */
	uint32_t type;	   /* index into types */
	uint32_t _pad;
};

struct tlset {
	struct stackset *ss;	      /* frames and distinct stacks (count: events) */
	char *types[TLSET_MAX_TYPES]; /* "cpu", "off-cpu", "cuda", ... */
	uint32_t ntypes;
	struct tl_thread *threads;
	size_t nthreads, threads_cap;
	struct tl_event *events; /* sorted by start_ns once tlset_sort ran */
	size_t nevents, events_cap;
	uint64_t dropped;	   /* events the daemon's bound lost for the selection */
	uint64_t start_ns, end_ns; /* the window asked for; 0 = open */
	uint32_t rate_hz;	   /* CPU sampling rate */
};

struct tlset *tlset_new(void);
void tlset_free(struct tlset *t);

/* t's events by thread, without moving them: thread i's are
 * events[order[first[i]]] .. events[order[first[i+1] - 1]], in time
 * order; main_of maps a pid to its main thread's index (tid == pid);
 * start_ns is the earlier of t->start_ns and the first event's.  What
 * every timeline renderer walks. */
struct tlset_threads {
	size_t *first, *order;
	struct hashmap main_of;
	uint64_t start_ns;
};
/* 0 or -ENOMEM; g is to be freed either way. */
int tlset_threads_init(struct tlset_threads *g, const struct tlset *t);
void tlset_threads_free(struct tlset_threads *g);
/* Index of a type name (added on first use), or -ENOSPC / -ENOMEM. */
int tlset_type(struct tlset *t, const char *name);
/* Index of thread (pid, tid), added with name on first use; a later
 * non-empty name replaces it (events come oldest first: the thread is
 * named as it is now, after an exec or a rename).  -ENOMEM on failure. */
int64_t tlset_thread(struct tlset *t, uint32_t pid, uint32_t tid, const char *name);
/* What a thread's track is called: Python's name, else the OS's, else
 * "?". */
const char *tlset_thread_label(const struct tl_thread *th);
/* Append an event (indices already valid). 0 or -ENOMEM / -EINVAL. */
int tlset_add(struct tlset *t, const struct tl_event *e);
/* Events by start time, then thread (stable for equal keys). */
void tlset_sort(struct tlset *t);

#endif
