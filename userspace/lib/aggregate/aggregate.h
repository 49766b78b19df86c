/* aggregate: per-process profiles.  Each process keeps its distinct
 * symbolized stacks once, and counts per (time bucket, stack, thread)
 * cell, so a dump can select a time window, split by thread, or keep only
 * Python frames.  Frame names are interned once for the whole daemon. */
#ifndef PROFD_AGGREGATE_H
#define PROFD_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "proctable.h"
#include "stackset.h"
#include "timeline.h"
#include "tlset.h"
#include "view.h"

struct aggregate {
	struct stackset *dict; /* frame dictionary: kind + name -> id */
	uint64_t bucket_ns;    /* width of a time bucket */
	uint64_t stacks;       /* distinct stacks held, all processes */
	uint64_t cells;        /* (bucket, stack, thread) counters held */
	uint64_t samples;      /* samples aggregated */
	uint64_t alloc_failed; /* samples lost to allocation failure */
	uint64_t max_stacks_per_proc; /* distinct stacks kept per process */
	uint64_t stacks_overflow;     /* samples counted under "[stack table full]" */
	uint32_t max_depth;           /* deepest stack stored, for sizing buffers */
	struct timeline_budget timeline; /* every process's recent events (timeline.h) */
	/* Called between two processes of a flush (may be NULL): the daemon
	 * lets a waiting reader of the profile state in there.  Whoever gets
	 * in must not change the process table or the profiles. */
	void (*flush_yield)(void *ctx);
	void *flush_yield_ctx;
	/* Called around a flush's commit (may be NULL), with the same
	 * context: SQLite's fsync can take hundreds of ms, readers need not
	 * wait for it.  Nothing may change the profiles in between. */
	void (*flush_io)(void *ctx, bool begin);
};

int aggregate_init(struct aggregate *a, uint64_t bucket_ns);
void aggregate_free(struct aggregate *a);
/* Makes the aggregator the owner of proc.profile in pt: it frees a
 * process's profile with the entry.  0 or -errno. */
int aggregate_own_procs(struct proctable *pt);

/* Intern a frame name once for the whole daemon; id or -ENOMEM. */
int64_t aggregate_frame(struct aggregate *a, uint32_t kind, const char *name);
/* The same for a frame in a binary (path, hex build-id or ""); path NULL
 * is aggregate_frame. */
int64_t aggregate_frame_in(struct aggregate *a, uint32_t kind, const char *name, const char *path,
			   const char *build_id);

/* A frame never merged with another of its name, to be named later by
 * aggregate_rename_frame (code a perf map may name once it is written):
 * id or -ENOMEM.  Dumps copy frames by name, so once renamed it adds up
 * with the frames interned under the new name. */
int64_t aggregate_frame_own(struct aggregate *a, uint32_t kind, const char *name, const char *path,
			    const char *build_id);
/* 0 or -errno (then the frame keeps its name). */
int aggregate_rename_frame(struct aggregate *a, uint32_t id, uint32_t kind, const char *name,
			   const char *path, const char *build_id);

/* The index of a symbolized stack (global frame ids, root first) in p's
 * profile, stored on first sight.  Keyed by content, so the same frames
 * always land together and a reused address can never mislabel. */
int64_t aggregate_stack(struct aggregate *a, struct proc *p, const uint32_t *frames,
			uint32_t depth);
/* Profile types: what a weight counts.  The value travels as the dump's
 * "type" string; append only. */
enum agg_type {
	AGG_CPU = 0,          /* "cpu": samples */
	AGG_GPU_DRIVER,       /* "gpu-driver": ns in ioctl/poll on accelerator devices */
	AGG_GPU_DRIVER_CALLS, /* "gpu-driver-calls": those calls */
	AGG_CUDA,             /* "cuda": ns in CUDA entry points */
	AGG_CUDA_CALLS,       /* "cuda-calls": those calls */
	AGG_OFFCPU,           /* "off-cpu": ns threads were blocked (sleep, lock, I/O) */
	AGG_WALL,             /* "wall": cpu samples as time plus off-cpu; composed at dump */
	AGG_GIL,              /* "gil": cpu samples of threads holding the GIL */
	AGG_MEMORY,           /* "memory": bytes made resident (user page faults) */
	AGG_MMAP,             /* "mmap": bytes mapped, unmapped as negative weights */
	AGG_COMM,             /* "comm": ns in blocking calls of MPI, c10d, NCCL */
	AGG_COMM_CALLS,       /* "comm-calls": those calls */
	AGG_TYPE_MAX
};

/* "cpu" -> AGG_CPU ...; -1 if unknown. */
int aggregate_type_from_name(const char *name);
const char *aggregate_type_name(int type);
/* The unit of a type's weights: "samples", "nanoseconds", "calls". */
const char *aggregate_type_unit(int type);
/* All type names, comma separated (for error messages). */
const char *aggregate_type_names(void);

/* Count one sample (or weight) of stack idx on thread tid at time t. */
int aggregate_count(struct aggregate *a, struct proc *p, uint32_t stack_idx, uint32_t tid,
		    const char *thread_name, uint64_t realtime_ns, uint64_t weight);
/* The same for any profile type. */
int aggregate_add(struct aggregate *a, struct proc *p, int type, uint32_t stack_idx, uint32_t tid,
		  const char *thread_name, uint64_t realtime_ns, uint64_t weight);

/* p has exec'd (p->exec_ns and p->comm say when and into what): what it
 * counted before is labelled as the old program's ("NAME, before exec
 * (TID)" by-thread roots), which the Python view leaves out. */
void aggregate_exec(struct aggregate *a, struct proc *p);

/* Every weight of type counted for p (wall, composed at dump, is 0). */
uint64_t aggregate_total(const struct proc *p, int type);

/* The bits of agg_query.flags; view.h has the frame filters. */
#define AGG_BY_THREAD (1u << 0)
#define AGG_PROCESS_ROOT (1u << 2)
#define AGG_UNFLUSHED (1u << 3) /* only what history does not hold yet */

struct agg_query {
	uint64_t since_ns, until_ns; /* CLOCK_REALTIME, 0 = open */
	uint32_t flags;
	int type; /* enum agg_type */
	uint64_t scale; /* each count times this (0: 1): cpu samples as ns in wall */
};

struct history;
struct agg_flush_stats {
	uint64_t rows, refused, cells_dropped;
	int err;
};

/* Write every count not yet in history (one transaction), then drop the
 * cells of closed buckets that history now holds in full: with history
 * on, memory keeps only recent and unflushed data.  0 or -errno (nothing
 * is marked flushed then, so the next flush retries). */
int aggregate_flush(struct aggregate *a, struct proctable *pt, struct history *h,
		    uint64_t now_ns, struct agg_flush_stats *st);

/* Add one weight of p's stack idx on thread tid to out as a dump with q's
 * flags would (for what is not stored: a block still under way). */
int aggregate_dump_stack(struct aggregate *a, const struct proc *p, const struct agg_query *q,
			 uint32_t stack_idx, uint32_t tid, const char *thread_name, uint64_t weight,
			 struct stackset *out);

/* Add p's timeline events in q's window (type and scale ignored) to out,
 * with their stacks as q's view flags show them.  Under the same lock as
 * aggregate_dump.  0 or -errno (aggregate_timeline.c). */
int aggregate_timeline(struct aggregate *a, const struct proc *p, const struct agg_query *q,
		       struct tlset *out);

/* Add p's matching samples to out (frames re-interned into out). */
int aggregate_dump(struct aggregate *a, const struct proc *p, const struct agg_query *q,
		   struct stackset *out);

#endif
