/* history: profiles that outlive the daemon, in one SQLite file
 * (<state_dir>/history.db, WAL mode).
 *
 * The daemon flushes what changed since its last flush as one transaction
 * of rows named by frame names (never by the daemon's in-memory ids), and
 * counts for the same (bucket, process, stack, thread) add up across
 * flushes.  Frames, the binaries (modules) native frames are in, and
 * stacks are stored once and referenced by id; a process is keyed by
 * (pid, start time) like the process table.
 *
 * Queries merge stored counts into a stackset with the same shape
 * aggregate_dump() produces (process and thread roots, Python-only), so
 * the caller can add the unflushed remainder it holds in memory.
 *
 * Every int function returns 0 or -errno and logs its failure once as
 * "history: ...".  Queries and prunes return -EBUSY while a flush is
 * open: the daemon runs them between flushes.  A corrupt, foreign or
 * newer file is moved aside as history.db.corrupt-<time> and a fresh one
 * started, at open or at the next call after corruption shows up. */
#ifndef PROFD_HISTORY_H
#define PROFD_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stackset.h"

#define HISTORY_DEFAULT_DIR "/var/lib/profd"
#define HISTORY_FILE "history.db"

struct history;

struct history_opts {
	uint64_t bucket_ns;	  /* width of the buckets written (default 10 s) */
	size_t frame_cache_max;	  /* frame names cached for writes (default 32768) */
	size_t stack_cache_max;	  /* stacks cached for writes (default 32768) */
	uint64_t hard_max_bytes;  /* writes fail with -ENOSPC beyond this (0 = none) */
	int busy_timeout_ms;	  /* wait for another writer (default 250) */
	uint64_t mark_every_ns;	  /* refresh "last used" of a frame or stack at most
				   * this often (default 1 h): unused ones outlive
				   * their last sample by up to this */
};

/* What history_procs() hands per profile type: the weights stored. */
struct history_total {
	char type[32]; /* history_add() refuses longer type names */
	uint64_t count; /* two's complement where weights are negative (mmap) */
};
#define HISTORY_TOTALS_MAX 32 /* types handed per process at most */

/* A process's workload (lib/proc/identity.h), a column each. */
enum history_ident {
	HISTORY_ID_SERVICE,
	HISTORY_ID_UNIT,
	HISTORY_ID_RUNTIME,
	HISTORY_ID_CONTAINER,
	HISTORY_ID_POD,
	HISTORY_ID_QOS,
	HISTORY_ID_SCRIPT,
	HISTORY_ID_CGROUP,
	HISTORY_ID_RANK, /* a distributed job's: the launcher's variables */
	HISTORY_ID_LOCAL_RANK,
	HISTORY_ID_WORLD_SIZE,
	HISTORY_ID_JOB,
	HISTORY_IDENT_N
};

/* A process instance.  Strings may be NULL (stored as ""). */
struct history_proc {
	uint32_t pid, uid;
	uint32_t ppid;			/* its parent at exec; 0: not known */
	uint64_t start_time;		/* as proc->start_time; with pid the key */
	const char *comm, *exe;
	/* Its workload; "" or NULL: not known (the stored one is kept). */
	const char *ident[HISTORY_IDENT_N];
	uint64_t first_ns, last_ns;	/* first/last sample, CLOCK_REALTIME */
	uint64_t exited_ns;		/* 0 = running */
	/* history_procs() only: its RSS points, (CLOCK_REALTIME ns, bytes)
	 * pairs, oldest first, the newest HISTORY_RSS_POINTS_MAX at most. */
	const uint64_t *rss;
	uint32_t nrss;
	/* history_procs() only: its stored weights, one per profile type. */
	const struct history_total *totals;
	uint32_t ntotals;
};
#define HISTORY_RSS_POINTS_MAX 1024

/* What a writer may keep beside a stack it adds bucket after bucket (the
 * aggregator: one per process stack), so that its later rows skip naming
 * and looking up every frame.  Zeroed is empty; history fills it and
 * knows when it is stale (ids change with a prune or a new file, and
 * every so often the frames' "last used" must be renewed). */
struct history_stack_memo {
	uint64_t gen;	  /* history's id generation it was filled in */
	int64_t id;	  /* stacks.id */
	uint64_t last_ns; /* the oldest "last used" of the stack and its frames */
};

/* One count: frames root first, by kind and name (and binary: see
 * history_add_in()). */
struct history_row {
	uint64_t bucket_ns;	 /* CLOCK_REALTIME in the bucket (rounded down to a
				  * multiple of history_opts.bucket_ns) */
	uint32_t tid;
	const char *thread;	 /* thread name; a trailing " (<tid>)" is dropped */
	uint32_t depth;
	const uint32_t *kinds;	 /* enum frame_kind */
	const char *const *names;
	uint64_t count;
	const char *type;	 /* NULL = "cpu" */
	struct history_stack_memo *memo; /* NULL, or the same stack's every time */
	bool stored;		 /* an earlier flush wrote part of this cell: add to it */
};

struct history_query {
	const uint32_t *pids;	     /* distinct; NULL/0: every process */
	size_t npids;
	const uint64_t *start_times; /* NULL, or per pid: only that instance */
	bool by_uid;		     /* only processes of uid (a non-root caller) */
	uint32_t uid;
	uint64_t since_ns, until_ns; /* CLOCK_REALTIME, 0 = open; buckets overlapping */
	bool by_thread, python_only, process_root;
	bool no_kernel; /* leave kernel frames out */
	bool by_task;	/* keep asyncio task frames */
	const char *type;	     /* NULL = "cpu" */
	uint64_t scale;		     /* each count times this (0: 1) */
};

struct history_stats {
	uint64_t file_bytes;	  /* page_count * page_size */
	uint64_t free_bytes;	  /* of it on the freelist */
	uint64_t wal_bytes;	  /* the -wal file now */
	uint64_t sample_rows, samples, stacks, frames, procs, modules;
	uint64_t flushes, rows_written, last_flush_rows, last_flush_ns;
	uint64_t rows_refused;	  /* malformed rows history_add() turned down */
	uint64_t stack_memo_hits; /* rows whose stack id came from their memo */
	uint64_t prunes, rows_pruned, bytes_pruned, last_prune_ns;
	uint64_t errors;	  /* SQLite and I/O errors logged */
	uint64_t resets;	  /* files moved aside (corrupt, foreign, newer) */
};

struct history_prune_stats {
	uint64_t rows_deleted;	  /* sample rows */
	uint64_t samples_deleted; /* sum of their counts */
	uint64_t stacks_deleted, frames_deleted, procs_deleted, modules_deleted;
	uint64_t bytes_before, bytes_after; /* page_count * page_size */
	uint64_t oldest_kept_ns;  /* first bucket left, 0 = empty */
	uint64_t elapsed_ns;	  /* the whole call */
	uint64_t shrink_ns;	  /* of it giving pages back (vacuum, checkpoint) */
};

/* Opens (creating the directory 0750 and the file 0640 if missing) or
 * returns NULL with errno set; state_dir NULL = HISTORY_DEFAULT_DIR and
 * o NULL = defaults. */
struct history *history_open(const char *state_dir, const struct history_opts *o);
void history_close(struct history *h);
const char *history_path(const struct history *h);

/* One transaction per flush.  A row that is malformed (-EINVAL, -ERANGE:
 * NULL names, a module without a path, a kind >= FRAME_KIND_MAX, deeper
 * than 4096 frames, values over INT64_MAX, -ENAMETOOLONG: a type of 32
 * characters or more) is refused alone and counted; the caller should
 * drop it.  After any other failure of history_add() the next ones
 * return the same error without touching the file, and history_commit()
 * rolls the whole flush back and returns it: the caller keeps its counts
 * as unflushed and sends them again next time. */
int history_begin(struct history *h);
int history_add(struct history *h, const struct history_proc *p, const struct history_row *r);
/* history_add() with the binary of each frame: modules[i] is frame i's
 * (NULL = none; the same name in two binaries is two frames), modules
 * NULL is history_add().  A separate call, not a history_row field, so a
 * caller that fills rows field by field cannot pass garbage. */
int history_add_in(struct history *h, const struct history_proc *p, const struct history_row *r,
		   const struct ss_module *const *modules);
/* One point of a process's resident set (in the flush's transaction,
 * under the same rules as history_add()). */
int history_add_rss(struct history *h, const struct history_proc *p, uint64_t t_ns,
		    uint64_t bytes);
int history_commit(struct history *h);
void history_rollback(struct history *h);

/* Adds the stored counts matching q to out (frames interned into out). */
int history_query(struct history *h, const struct history_query *q, struct stackset *out);

/* Calls fn for each stored process whose last sample is at or after
 * since_ns, newest first, with the weights stored for it per profile type
 * (p->totals) and its RSS points (p->rss); a non-zero return from fn
 * stops and is returned.  Strings and arrays live until fn returns.
 * skip (NULL: none) is asked first, with p's identity only (no totals,
 * no points): the totals read every row the process has, which a caller
 * that has the figures already need not pay for. */
typedef int (*history_proc_fn)(const struct history_proc *p, void *ctx);
typedef bool (*history_skip_fn)(const struct history_proc *p, void *ctx);
int history_procs(struct history *h, uint64_t since_ns, history_skip_fn skip, history_proc_fn fn,
		  void *ctx);

/* Deletes buckets that ended at or before older_than_ns (0 = keep all),
 * then, while the file holds more than max_bytes (0 = no cap), the oldest
 * buckets (keeping 10% below the cap, never the newest bucket); then
 * stacks, frames, modules and processes nothing refers to any more.
 * Freed pages go back to the file system when the file is over max_bytes
 * or a quarter free, else they are reused by the next flushes.  Each step
 * is its own transaction.  Cheap when run often (a minute of retention: a
 * few ms); a first prune after a long stop can take seconds.  st may be
 * NULL. */
int history_prune(struct history *h, uint64_t older_than_ns, uint64_t max_bytes,
		  struct history_prune_stats *st);

/* Counters, the file's size, and the row counts (stacks, frames, procs
 * and modules are counted: milliseconds; ask on demand, not per flush). */
int history_stats(struct history *h, struct history_stats *out);
/* The same, counting rows only when some were added or ids changed
 * since the last count: what a flush can afford each time (in a steady
 * state the counters, two lookups and the file size). */
int history_stats_light(struct history *h, struct history_stats *out);

#endif
