/* unwinder: feeds the in-kernel .eh_frame unwinder (bpf/unwind.bpf.h).
 * For each process it reads /proc/PID/maps, builds (or reuses) the unwind
 * table of every executable file it maps, keyed by file identity so that
 * every process mapping libc shares one copy, writes the rows and the
 * process's mapping list into the BPF maps, and keeps the table memory
 * under a fixed cap: unused tables are evicted first, then new ones are
 * refused (those files fall back to frame pointers) and counted.
 *
 * It works with any skeleton that includes unwind.bpf.h: pass the maps.
 * Not thread-safe: call it from one thread (the daemon's main loop). */
#ifndef PROFD_UNWINDER_H
#define PROFD_UNWINDER_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "profd_abi_unwind.h"

struct bpf_map;
struct unwinder;

struct unwinder_opts {
	uint64_t table_bytes;  /* cap on row memory (the unwind_rows map); default 64 MiB */
	uint32_t max_mappings; /* executable mappings of all processes together; default 65536 */
	uint32_t max_procs;    /* processes with tables at once; default 8192 */
	const char *proc_root; /* default "/proc" */
	/* When the tables do not fit, those of files no process sampled for
	 * this long give way (to frame pointers); default 10 s. */
	uint64_t idle_ns;
	/* A table no process maps stays cached this long (the next process
	 * of the same program reuses it), then its memory goes back;
	 * default 5 min. */
	uint64_t keep_unused_ns;
};

/* The skeleton's maps from unwind.bpf.h (skel->maps.unwind_rows, ...). */
struct unwinder_maps {
	struct bpf_map *rows;
	struct bpf_map *mappings;
	struct bpf_map *procs;
	struct bpf_map *counters;   /* may be NULL: no BPF counters in stats */
	struct bpf_map *rule_cache; /* unwind_rule_cache; may be NULL: no hit count */
	/* The skeleton's unwind_epoch (skel->data->unwind_epoch).  NULL: no
	 * process counts as sampled but while its tables are built, so idle
	 * tables never give way. */
	volatile __u64 *epoch;
};

/* Before the skeleton's __load(): size the maps from opts (may be NULL).
 * 0 or -errno. */
int unwinder_size_maps(const struct unwinder_maps *maps, const struct unwinder_opts *opts);

/* After __load(), with the same opts.  NULL + errno.  The rows and
 * mappings maps are written through mmap (they are BPF_F_MMAPABLE). */
struct unwinder *unwinder_new(const struct unwinder_opts *opts, const struct unwinder_maps *maps);
/* Frees our state only; what is in the maps stays until the skeleton
 * goes. */
void unwinder_free(struct unwinder *u);
/* fn is asked between two tables of one process after 100 ms of building
 * them: true when other work waits.  Then add/refresh returns -EAGAIN
 * with what is built published, and the caller asks again later to go
 * on.  Without it (the default) a process's tables are built in one
 * call.  Before the first add. */
void unwinder_set_yield(struct unwinder *u, bool (*fn)(void *ctx), void *ctx);

/* Start unwinding pid with tables: at process discovery and after exec.
 * Calling it for a known pid is the same as refresh.  0, or -errno
 * (-ESRCH gone, -ENOSPC no room for its mapping list, -EAGAIN yielded:
 * see unwinder_set_yield()); files whose table cannot be built or does not fit
 * degrade to frame pointers, not errors. */
int unwinder_add_process(struct unwinder *u, int pid);
/* Re-read the maps (after dlopen, or when BPF reported an unknown pc);
 * cheap when nothing changed.  Same returns as add. */
int unwinder_refresh_process(struct unwinder *u, int pid);
/* Forget pid (exit).  0 or -ENOENT. */
int unwinder_remove_process(struct unwinder *u, int pid);
/* Table frames whose rule came from BPF's per-CPU rule cache (a read of
 * the whole cache: for stats, not per sample).  Any thread. */
uint64_t unwinder_rule_cache_hits(const struct unwinder *u);
/* Tables published as pending (a gap) and not built yet.  Any thread. */
uint32_t unwinder_tables_pending(const struct unwinder *u);
/* Note which processes BPF sampled since the last call (their files stay
 * loaded when memory runs out); at most once per idle_ns / 4.  Call it
 * every second or so from the thread that owns u, so that a sample's time
 * is known within that. */
void unwinder_note_sampling(struct unwinder *u);
/* How often unwinder_note_sampling() does anything (fixed at creation:
 * any thread), so a caller need not wake u's thread more often. */
uint64_t unwinder_note_every_ns(const struct unwinder *u);

struct unwinder_stats {
	uint64_t table_bytes_used;  /* rows in use * row size */
	uint64_t table_bytes_limit; /* the cap */
	uint64_t table_bytes_allocated; /* in chunks made: what the rows cost now */
	uint64_t mapping_bytes_allocated; /* the same for the mappings */
	uint64_t chunks_made;		  /* of both, since start */
	uint32_t mappings_used, mappings_limit;
	uint32_t procs;
	uint32_t files;	       /* files known (with or without table) */
	uint32_t files_loaded; /* files whose table is in the BPF map */
	uint32_t files_no_cfi; /* no .eh_frame: frame pointers */
	uint32_t files_failed; /* unreadable or not ELF: frame pointers */
	uint64_t rows_loaded;
	uint64_t tables_built;
	uint64_t build_ns_total, build_ns_max;
	uint64_t evictions;	   /* unused tables dropped to make room */
	uint64_t expired;	   /* unused tables dropped after keep_unused_ns */
	uint64_t refusals;	   /* tables that did not fit: frame pointers instead */
	uint64_t given_way;	   /* tables of idle files dropped for a sampled one */
	uint64_t mappings_dropped; /* mappings beyond PROFD_UNWIND_MAX_PROC_MAPPINGS */
};

void unwinder_stats(const struct unwinder *u, struct unwinder_stats *out);

/* One file, for `profctl stats` and tests. */
struct unwinder_file_info {
	const char *path; /* as first seen */
	uint32_t id;
	uint32_t refs; /* mappings using it now */
	uint32_t rows; /* 0 unless loaded */
	uint64_t bytes;
	uint64_t first_byte; /* where its rows start in unwind_rows; loaded only */
	uint64_t build_ns;
	const char *state; /* "loaded", "no-cfi", "failed", "refused", "evicted", "gave-way" */
};

typedef void (*unwinder_file_fn)(void *ctx, const struct unwinder_file_info *fi);
void unwinder_for_each_file(const struct unwinder *u, unwinder_file_fn fn, void *ctx);

/* The BPF side's counters summed over CPUs.  0 or -errno. */
int unwinder_counters(const struct unwinder *u, uint64_t out[PROFD_UNWIND_CNT_MAX]);
const char *unwinder_counter_name(int which);

#endif
