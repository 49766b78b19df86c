/* timeline: what each process did recently, event by event, for
 * `profctl dump --format gecko`.  Aggregation folds sample times into
 * buckets; this keeps them: per process two rings of compact events (32
 * bytes: start, weight, thread, stack index, type), their newest ones:
 * one for CPU samples, one for the rest (off-CPU blocks, CUDA and driver
 * calls, memory), so a flood of CUDA launches or short blocks never
 * pushes the samples out, nor the samples the calls.
 *
 * Bounds: a ring holds at most per_proc_max events and all rings together
 * at most max_bytes; a ring starts small and doubles while both allow,
 * then overwrites its oldest event (counted in evicted).  Memory is never
 * asked for per event.  When all rings together are at max_bytes, the
 * timeline fed longest ago (an exited or idle process's; not one fed in
 * the last TIMELINE_IDLE_NS, which a `record` may still want) gives its
 * memory to the one that needs it (counted in reclaimed): hundreds of
 * short processes a second would otherwise fill the budget and leave a
 * job started later with no timeline at all.  Owned by the aggregator: fed by aggregate_add on
 * the ingest thread, read by dumps under the daemon's lock, freed with the
 * process's profile. */
#ifndef PROFD_TIMELINE_H
#define PROFD_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 100k events a ring: at 99 Hz, 16 busy threads for a minute; 3.2 MB,
 * 6.4 MB for a process's two. */
#define TIMELINE_PER_PROC_DEFAULT 100000u
/* All rings: 64 MiB, 2M events, ten processes with both rings full. */
#define TIMELINE_BYTES_DEFAULT (64ull << 20)
/* A timeline fed more recently than this is never reclaimed. */
#define TIMELINE_IDLE_NS (30ull * 1000000000ull)

struct timeline;

struct timeline_budget {
	uint64_t max_bytes;    /* all rings together */
	uint32_t per_proc_max; /* events one ring keeps (a process has two); 0: off */
	uint64_t bytes;	       /* held now */
	uint64_t events;       /* events recorded */
	uint64_t evicted;      /* overwritten by newer ones (the bound) */
	uint64_t lost;	       /* not recorded: no memory for a first ring */
	uint64_t reclaimed;    /* events dropped with a timeline fed long ago */
	struct timeline *newest, *oldest; /* every timeline, by when last fed */
};

struct timeline_event {
	uint64_t start_ns; /* CLOCK_REALTIME; intervals: when they began */
	uint64_t weight;   /* samples, ns or bytes, as the type counts */
	uint32_t tid;
	uint32_t stack;	       /* index into the process's profile stacks */
	uint32_t thread_frame; /* global frame id of "name (tid)" */
	uint8_t type;	       /* enum agg_type */
	uint8_t _pad[3];
};

struct timeline_ring {
	struct timeline_event *ev;
	uint32_t cap, n;
	uint32_t head; /* the slot the next event goes to */
};

enum { TIMELINE_SAMPLES, TIMELINE_EVENTS, TIMELINE_RINGS };

struct timeline {
	struct timeline_budget *budget;
	struct timeline_ring ring[TIMELINE_RINGS]; /* CPU samples; the other types */
	uint64_t evicted;			   /* this process's events overwritten */
	uint64_t fed_ns;			   /* the latest event's start */
	struct timeline *newer, *older;		   /* the budget's list */
	struct timeline **owner;		   /* set to NULL when reclaimed */
};

void timeline_budget_init(struct timeline_budget *b);
/* Whether events of this type go on the timeline: cpu, off-cpu, cuda,
 * gpu-driver, memory (the *-calls, gil and wall types repeat them). */
bool timeline_keeps(int type);
/* The start of an event counted at realtime_ns with weight: an off-CPU
 * block is counted at its end (switch-in), every other type at its start. */
uint64_t timeline_start(int type, uint64_t realtime_ns, uint64_t weight);
/* Record e in *tl (made on first use; *tl must stay where it is while
 * the timeline lives: reclaiming sets it to NULL).  Never fails: past the
 * bounds the oldest event goes, and without memory the event is counted
 * lost. */
void timeline_add(struct timeline_budget *b, struct timeline **tl, const struct timeline_event *e);
void timeline_free(struct timeline *tl);
/* Events held: both rings. */
uint32_t timeline_count(const struct timeline *tl);
/* Event i of tl (i < timeline_count): the samples oldest first, then the
 * other events oldest first. */
const struct timeline_event *timeline_at(const struct timeline *tl, uint32_t i);

#endif
