/* history_int.h: what history.c, history_write.c, history_query.c and
 * history_prune.c share.  Not part of the public API. */
#ifndef PROFD_HISTORY_INT_H
#define PROFD_HISTORY_INT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "hashmap.h"
#include "history.h"

/* The schema this code writes; PRAGMA user_version holds the file's. */
#define HIST_SCHEMA_VERSION 5
/* PRAGMA application_id: "prof", so a foreign SQLite file is recognized. */
#define HIST_APPLICATION_ID 0x70726f66
/* Deeper rows are refused (-ERANGE): the BPF side walks far fewer. */
#define HIST_MAX_DEPTH 4096

/* Every statement, prepared once at open (texts in history_schema.c). */
enum hist_stmt {
	HS_BEGIN,
	HS_BEGIN_READ,
	HS_COMMIT,
	HS_ROLLBACK,
	HS_META_GET,
	HS_META_ADD,
	HS_FRAME_FIND,
	HS_FRAME_INSERT,
	HS_FRAME_TOUCH,
	HS_FRAME_GET,
	HS_MODULE_FIND,
	HS_MODULE_INSERT,
	HS_STACK_FIND,
	HS_STACK_INSERT,
	HS_STACK_TOUCH,
	HS_STACK_GET,
	HS_PROC_UPSERT,
	HS_PROC_SAMPLES,
	HS_PROC_BY_PID,
	HS_PROC_ALL,
	HS_PROC_LIST,
	HS_SERIES_FIND,
	HS_SERIES_INSERT,
	HS_SERIES_BY_TYPE,
	HS_SERIES_ALL,
	HS_SAMPLE_INSERT,
	HS_SAMPLE_UPDATE,
	HS_SAMPLE_RANGE,
	HS_PRUNE_COUNT,
	HS_PRUNE_DELETE,
	HS_PRUNE_PROC_SAMPLES,
	HS_MIN_BUCKET,
	HS_MAX_BUCKET,
	HS_PROCS_EMPTY,
	HS_STACKS_UNUSED,
	HS_FRAMES_UNUSED,
	HS_MODULES_UNUSED,
	HS_PAGE_COUNT,
	HS_FREELIST,
	HS_INCR_VACUUM,
	HS_COUNT_TABLES,
	HS_RSS_INSERT,
	HS_RSS_OF_PROC,
	HS_RSS_UNUSED,
	HS_PROC_TOTALS,
	HS_NSTMT
};

/* A bounded write cache: (prefix, bytes, module) -> database id.  When
 * full it starts over; a miss only costs a lookup in the file. */
struct hist_centry {
	uint64_t hash;
	int64_t id;
	uint64_t last_ns; /* as stored: see touch() in history_write.c */
	int64_t module;	 /* frames: modules.id, 0 = none */
	uint32_t prefix; /* frame kind, stack depth, or module path length */
	uint32_t len;
	uint8_t *bytes;	 /* name, encoded frame ids, or "path\0build_id" */
};

struct hist_key {
	uint64_t hash; /* what the file stores: hash(kind, name) for frames */
	uint32_t prefix;
	uint32_t len;
	const void *bytes;
	int64_t module;
};

struct hist_cache {
	struct hashmap index; /* hash (+ probe) -> entry + 1 */
	struct hist_centry *e;
	size_t n, cap, max;
};

/* A process seen in the open transaction. */
struct hist_txproc {
	uint32_t pid;
	uint64_t start_time;
	int64_t id;
	uint64_t samples; /* added in this transaction */
};

#define HIST_SERIES_CACHE 16 /* every profile type fits */

struct history {
	sqlite3 *db;
	char *dir, *path;
	struct history_opts o;
	sqlite3_stmt *st[HS_NSTMT];
	uint32_t page_size;
	bool broken; /* corruption seen: start over at the next begin */

	/* The open write transaction. */
	bool in_txn;
	int txn_err;
	uint64_t txn_start_ns, txn_rows, txn_new_rows, txn_samples;
	struct hashmap txn_index; /* hash(pid, start_time) -> txproc + 1 */
	struct hist_txproc *txprocs;
	size_t ntxprocs, txprocs_cap;
	uint64_t row_ns;	  /* start of the bucket of the row being added */
	struct hist_series {	  /* ids of the types written so far, at o.bucket_ns */
		char type[32];
		int64_t id;
	} series[HIST_SERIES_CACHE];
	uint32_t nseries;

	struct hist_cache frames, stacks, modules;
	uint64_t ids_gen;	  /* changes whenever ids may be gone or reused */
	bool counts_stale;	  /* s.stacks/frames/procs/modules need a count */
	int64_t proc_id_max;	  /* highest procs.id seen since: above it is new */
	uint8_t *scratch;	  /* encoded stack */
	size_t scratch_cap;
	char *modkey;		  /* "path\0build_id" being looked up */
	size_t modkey_cap;

	struct history_stats s;	  /* running counters (file figures filled on demand) */
};

/* history_schema.c: hist_migrations[v] turns schema v - 1 into v. */
extern const char *const hist_migrations[HIST_SCHEMA_VERSION + 1];
extern const char *const hist_sql[HS_NSTMT];

/* history.c */
int hist_fail(struct history *h, int rc, const char *what);
int hist_errno(sqlite3 *db, int rc);
sqlite3_stmt *hist_stmt(struct history *h, enum hist_stmt which);
int hist_step_done(struct history *h, enum hist_stmt which, const char *what);
int hist_get_u64(struct history *h, enum hist_stmt which, uint64_t *out, const char *what);
int hist_meta_add(struct history *h, const char *key, int64_t delta);
int hist_file_bytes(struct history *h, uint64_t *used, uint64_t *free_bytes);
int hist_recover(struct history *h);
int hist_grow(void **arr, size_t *cap, size_t need, size_t elem);

/* history_write.c */
uint64_t hist_hash(const void *data, size_t len, uint64_t seed);
void hist_cache_init(struct hist_cache *c, size_t max);
void hist_cache_reset(struct hist_cache *c);
void hist_cache_free(struct hist_cache *c);
void hist_caches_reset(struct history *h);
uint64_t hist_new_gen(void);
void hist_txn_reset(struct history *h);
void hist_encode_u32(uint8_t *p, uint32_t v);
uint32_t hist_decode_u32(const uint8_t *p);

#endif
