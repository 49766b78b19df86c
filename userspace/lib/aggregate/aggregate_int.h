/* aggregate_int.h: the aggregator's per-process storage, shared by
 * aggregate.c (counting, dumps) and aggregate_flush.c (history). */
#ifndef PROFD_AGGREGATE_INT_H
#define PROFD_AGGREGATE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "hashmap.h"
#include "history.h"

struct agg_stack {
	uint32_t depth;
	uint32_t *frames; /* global frame ids, root first */
	struct history_stack_memo memo; /* its id in history, kept by history */
};

struct agg_cell {
	uint32_t bucket;
	uint32_t stack;
	uint32_t tid;
	uint32_t thread_frame; /* global id of "name (tid)" root frame */
	uint64_t count;
	uint64_t flushed;      /* of count, already written to history */
	uint32_t type;         /* enum agg_type */
	uint32_t _pad;
};

struct proc_profile {
	struct agg_stack *stacks;
	size_t nstacks, stacks_cap;
	struct hashmap stack_index; /* hash(frames) -> idx + 1 */
	struct agg_cell *cells;
	size_t ncells, cells_cap;
	struct hashmap cell_index; /* hash(bucket, stack, tid) -> idx + 1 */
	/* Every weight counted, by enum agg_type: cells go once flushed,
	 * these stay for profctl list. */
	uint64_t totals[AGG_TYPE_MAX];
	struct timeline *timeline; /* recent events in time order, or NULL */
	/* A flush under way (aggregate_flush.c): each cell's count as this
	 * process's rows were written, and the last RSS point written.  Only
	 * these are marked flushed after the commit: the table may move the
	 * process, or counts may grow, while the flush lets readers in. */
	uint64_t *written;
	size_t nwritten;
	uint64_t rss_written_ns;
};

/* Key of a cell in proc_profile.cell_index (probe on collision). */
uint64_t agg_cell_key(uint32_t bucket, uint32_t stack, uint32_t tid, int type);

#endif
