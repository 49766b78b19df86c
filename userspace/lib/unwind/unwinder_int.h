/* unwinder_int.h: what unwinder.c (processes, maps, reporting) and
 * unwinder_file.c (the per-file table cache) share.  Internal. */
#ifndef PROFD_UNWINDER_INT_H
#define PROFD_UNWINDER_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "hashmap.h"
#include "procmaps.h"
#include "rangealloc.h"
#include "unwind_pack.h"
#include "unwind_table.h"
#include "unwinder.h"

/* A walk that found a slice through a map entry we just replaced or
 * deleted may still read it: BPF programs run to completion in
 * microseconds, so freed slices wait this long before reuse (and an
 * allocation that needs them waits at most this long). */
#define UNWINDER_GRACE_NS (5ull * 1000 * 1000)
/* While a process's tables are built, its list is published again this
 * often with the tables built so far. */
#define UNWINDER_REPUBLISH_NS (200ull * 1000 * 1000)
/* Building one process's tables for this long, it asks u->yield
 * whether others wait (a PyTorch process takes seconds). */
#define UNWINDER_YIELD_NS (100ull * 1000 * 1000)

/* EVICTED: not built, or built and dropped while no one mapped it.
 * GAVE_WAY: dropped while mapped, its processes idle, for a sampled one. */
enum file_state { FILE_LOADED, FILE_NO_CFI, FILE_FAILED, FILE_REFUSED, FILE_EVICTED, FILE_GAVE_WAY };

/* Identity of a file: what /proc/PID/map_files/ stat()s to.  The vdso
 * has its own key. */
struct file_key {
	uint64_t dev, ino, size, mtime_ns;
};

struct uw_file {
	struct file_key key;
	char *path;
	uint32_t id;
	enum file_state state;
	uint32_t refs;	    /* mappings of live processes using it */
	uint32_t slot_start; /* first unwind_rows value of the packed table, when LOADED */
	uint32_t nslots;     /* its values (two words each); known once built, kept */
	uint32_t nrows;	     /* rows of the table */
	struct unwind_packed_loc loc; /* word indexes relative to slot_start * 2 */
	uint64_t pc_base;
	struct unwind_segment segs[UNWIND_TABLE_MAX_SEGMENTS];
	size_t nsegs;
	uint64_t build_ns;
	uint64_t last_used;
	uint64_t unref_ns;   /* when refs last fell to 0 */
	uint64_t sampled_ns; /* latest sampled_ns of a process mapping it (or its build) */
};

struct uw_proc {
	int pid;
	uint32_t map_start, map_count;
	struct uw_file **files; /* one per mapping: the references it holds */
	uint64_t maps_hash;     /* of the executable mappings last published */
	uint64_t start_stack;   /* mm->start_stack: changes with every exec */
	uint32_t pending;       /* its files counted in unwinder.tables_pending */
};

/* An array of chunks (unwinder_chunks.c): unwind_rows or
 * unwind_mappings.  A made chunk is held by its slot and its mapping
 * here; no fd is kept. */
struct uw_chunks {
	struct bpf_map *slots;	     /* the ARRAY_OF_MAPS */
	const char *name;	     /* of each chunk's map, and in messages */
	uint32_t value_size, shift;  /* a chunk holds 1 << shift values */
	uint32_t n;		     /* slots: the cap, in chunks */
	void **mem;		     /* per slot: the chunk mapped, or NULL */
	uint64_t *bytes;	     /* the stats counter of chunks made */
	uint64_t made;		     /* chunks made so far (stats) */
};

/* Value v of the chunks; NULL when its chunk is not made. */
static inline void *uwchunks_at(const struct uw_chunks *c, uint32_t v)
{
	void *m = (v >> c->shift) < c->n ? c->mem[v >> c->shift] : NULL;

	return m ? (char *)m + (size_t)(v & ((1u << c->shift) - 1)) * c->value_size : NULL;
}

struct unwinder {
	struct unwinder_maps maps;
	char proc_root[256];
	struct uw_chunks rows_mem, maps_mem; /* behind the allocators below */
	struct rangealloc rows, mappings;
	struct hashmap files; /* hash of key -> struct uw_file * */
	struct hashmap procs; /* pid -> struct uw_proc * */
	uint32_t next_file_id;
	uint64_t clock; /* LRU ticks */
	uint64_t idle_ns;	/* unwinder_opts.idle_ns */
	uint64_t keep_unused_ns; /* unwinder_opts.keep_unused_ns */
	bool (*yield)(void *ctx); /* unwinder_set_yield() */
	void *yield_ctx;
	uint64_t sampled_read_ns; /* when unwinder_note_sampling last read the BPF side */
	uint32_t tables_pending;  /* atomic: tables published as pending, not built yet */
	struct unwinder_stats st;
};

/* The file of an executable mapping, known or new (then not built yet);
 * NULL for anonymous code or no memory.  The caller takes a reference. */
struct uw_file *uwfile_get(struct unwinder *u, int pid, const struct procmap *m);
/* Build and load f's table (when uwfile_needs_build says so); on failure
 * or no room f settles on frame pointers.  m is a mapping of f in pid. */
void uwfile_load(struct unwinder *u, struct uw_file *f, int pid, const struct procmap *m);
/* Drop a reference; a file no one maps keeps only a loaded table. */
void uwfile_unref(struct unwinder *u, struct uw_file *f);
void uwfile_free(struct uw_file *f);
/* Whether a table of n values would fit, once unused tables are evicted
 * and idle ones give way. */
bool uwfile_has_room(struct unwinder *u, uint32_t n);
/* Drop the tables no process has mapped for keep_unused_ns. */
void uwfile_expire_unused(struct unwinder *u, uint64_t now);
/* A table wanted but not loaded: it did not fit or gave way. */
bool uwfile_wanted(const struct uw_file *f);
/* Whether f's table should be built now. */
bool uwfile_needs_build(struct unwinder *u, const struct uw_file *f);
/* Point every published mapping of f at frame pointers (flagged wanted)
 * before f's rows are freed. */
void uwproc_unpublish_file(struct unwinder *u, const struct uw_file *f);
const char *uwfile_state_name(enum file_state s);

/* unwinder_chunks.c: the memory behind u->rows and u->mappings. */
int uwchunks_init(struct uw_chunks *c, struct bpf_map *slots, const char *name,
		  uint32_t value_size, uint32_t shift, uint64_t *bytes);
void uwchunks_free(struct uw_chunks *c);
/* Copy len bytes to values [start, ...), making the chunks they reach.
 * 0, or -errno (a chunk could not be made: nothing written). */
int uwchunks_write(struct uw_chunks *c, uint32_t start, const void *src, size_t len);
/* Drop the chunks at the top that hold nothing a (their allocator) has
 * allocated or held back. */
void uwchunks_trim(struct uw_chunks *c, struct rangealloc *a);
/* Mapping i of process p (in a chunk made when it was published). */
static inline struct profd_unwind_mapping *uwproc_mapping(const struct unwinder *u,
							  const struct uw_proc *p, uint32_t i)
{
	return uwchunks_at(&u->maps_mem, p->map_start + i);
}

#endif
