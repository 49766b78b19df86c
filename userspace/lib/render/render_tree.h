/* render_tree: the frame tree every flamegraph-like renderer draws.
 * Stacks are put in a deterministic order; walking them in that order
 * merges common prefixes into tree nodes without building the tree in
 * memory (only the current path is kept), so 100,000-stack profiles cost
 * O(stacks) memory. */
#ifndef PROFD_RENDER_TREE_H
#define PROFD_RENDER_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "stackset.h"

/* Frame id of the synthetic root node ("all") in walk callbacks. */
#define RENDER_TREE_ROOT UINT32_MAX

enum render_order {
	/* By frame names level by level, then kinds: folded output order. */
	RENDER_ORDER_NAMES,
	/* By (name, kind) at each level: equal prefixes are contiguous, which
	 * the tree walk needs. */
	RENDER_ORDER_TREE,
};

struct render_tree {
	const struct stackset *ss;
	size_t *order;      /* stack indices, zero-count stacks left out */
	size_t n;           /* entries in order */
	uint32_t max_depth; /* deepest stack, root not counted */
	uint64_t total;     /* sum of the counts in order */
};

struct render_node {
	uint32_t frame; /* id in ss->frames, or RENDER_TREE_ROOT */
	uint32_t depth; /* 0 = root */
	uint64_t start; /* samples before this node at its depth */
	uint64_t total; /* samples in this node and below */
	uint64_t self;  /* samples whose leaf is this node */
};

/* Called once per node, children before their parent (post-order);
 * a non-zero return stops the walk and is returned by the walk. */
typedef int (*render_tree_cb)(const struct render_node *node, void *ctx);

/* 0, -ENOMEM, or -EOVERFLOW when the counts do not fit 64 bits. */
int render_tree_init(struct render_tree *t, const struct stackset *ss, enum render_order mode);
void render_tree_free(struct render_tree *t);
/* Needs RENDER_ORDER_TREE.  0, -ENOMEM or the callback's return. */
int render_tree_walk(const struct render_tree *t, render_tree_cb cb, void *ctx);

/* The frames the tree's stacks use, numbered in first-use order: the
 * frame table of the JSON outputs, identical for identical profiles. */
struct render_frames {
	uint32_t *index; /* frame id -> output index + 1, 0 = unused */
	uint32_t *order; /* output index -> frame id */
	uint32_t n;
};

/* 0 or -ENOMEM. */
int render_frames_number(struct render_frames *rf, const struct render_tree *t);
void render_frames_free(struct render_frames *rf);

#endif
