/* difftree: the merged frame tree of two profiles (before and after),
 * for differential flamegraphs.  Frames are matched by (kind, name) and
 * stacks by their whole path from the root, so a node is "the same frame
 * reached the same way" in both profiles.  Like render_tree, the walk
 * keeps only the current path in memory. */
#ifndef PROFD_DIFFTREE_H
#define PROFD_DIFFTREE_H

#include <stddef.h>
#include <stdint.h>

#include "render_tree.h" /* RENDER_TREE_ROOT */
#include "stackset.h"

struct difftree_stack {
	uint32_t *frames; /* ids in difftree.frames, root first */
	uint32_t depth;
	uint64_t after, before;
};

struct difftree {
	struct stackset *frames; /* union frame table; holds no stacks */
	struct difftree_stack *stacks; /* sorted by path, one per distinct path */
	size_t n, cap;
	uint32_t max_depth;
	uint64_t after_total, before_total;
};

struct difftree_node {
	uint32_t frame; /* id in difftree.frames, or RENDER_TREE_ROOT */
	uint32_t depth; /* 0 = root */
	uint32_t parent; /* the parent's frame; RENDER_TREE_ROOT under the root */
	uint64_t start; /* "after" samples left of this node at its depth */
	uint64_t after, before;           /* this node and below */
	uint64_t after_self, before_self; /* stacks ending here */
	uint64_t seq; /* opening order: a node's descendants have larger seq */
};

/* Called once per node, children before their parent; a non-zero return
 * stops the walk and is returned by it. */
typedef int (*difftree_cb)(const struct difftree_node *node, void *ctx);

/* 0, -ENOMEM, or -EOVERFLOW when a side's counts overflow 64 bits. */
int difftree_init(struct difftree *t, const struct stackset *before,
		  const struct stackset *after);
void difftree_free(struct difftree *t);
int difftree_walk(const struct difftree *t, difftree_cb cb, void *ctx);

#endif
