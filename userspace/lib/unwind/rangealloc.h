/* rangealloc: first-fit allocator of index ranges [start, start + len)
 * inside a fixed-size array, such as a BPF array map shared by many
 * tables.  Freed ranges coalesce with their neighbours.  A range can be
 * freed "later": it is held back for a grace period so that a BPF program
 * still reading the old contents never sees them overwritten. */
#ifndef PROFD_RANGEALLOC_H
#define PROFD_RANGEALLOC_H

#include <stddef.h>
#include <stdint.h>

struct rangealloc_span {
	uint32_t start, len;
	uint64_t free_at_ns; /* held-back spans only */
};

struct rangealloc {
	struct rangealloc_span *free; /* sorted by start, coalesced */
	size_t nfree, capfree;
	struct rangealloc_span *held; /* freed later */
	size_t nheld, capheld;
	uint32_t size; /* the whole array */
	uint32_t used; /* allocated, including held-back spans */
};

/* 0 or -ENOMEM. */
int rangealloc_init(struct rangealloc *a, uint32_t size);
void rangealloc_destroy(struct rangealloc *a);
/* First fit: 0 and *start, or -ENOSPC (no free span that long). */
int rangealloc_alloc(struct rangealloc *a, uint32_t len, uint32_t *start);
/* Give a range back now; 0 or -ENOMEM (then the span leaks, counted in used). */
int rangealloc_free(struct rangealloc *a, uint32_t start, uint32_t len);
/* Give it back once now_ns passes free_at_ns. */
int rangealloc_free_later(struct rangealloc *a, uint32_t start, uint32_t len, uint64_t free_at_ns);
/* Release held-back spans whose time has come. */
void rangealloc_reap(struct rangealloc *a, uint64_t now_ns);
/* rangealloc_alloc, and when only held-back spans stand in the way,
 * sleep until they are due (at most the grace period) and try again. */
int rangealloc_alloc_wait(struct rangealloc *a, uint32_t len, uint32_t *start,
			  uint64_t (*now_ns)(void));
/* Longest free span (what the next alloc can get). */
uint32_t rangealloc_largest(const struct rangealloc *a);
/* Where the free span that ends the array starts: nothing at or above
 * it is allocated or held back (size when the last index is in use). */
uint32_t rangealloc_free_tail(const struct rangealloc *a);

#endif
