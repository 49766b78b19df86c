/* gfpbits: the page allocator's flags that mark an anonymous transparent
 * huge page (memory.bpf.h's on_huge_page), as this kernel numbers them.
 * Kernels from 6.10 name each bit in an enum their BTF carries; older
 * ones only #define them, with the values every kernel from 4.x to 6.9
 * used for these three (bit 9, once __GFP_ATOMIC, was left unused when
 * 6.3 dropped it, so nothing above it moved). */
#ifndef PROFD_GFPBITS_H
#define PROFD_GFPBITS_H

#include <stdbool.h>
#include <stdint.h>

struct btf;

/* GFP_TRANSHUGE_LIGHT and every THP fault's mask carry all three; the page
 * cache's large folios (no NOMEMALLOC) and the kernel's own allocations
 * (no MOVABLE) do not. */
struct gfpbits {
	uint32_t movable, comp, nomemalloc;
	bool from_btf; /* false: the constants of kernels before 6.10 */
};

/* From btf (the kernel's; NULL: the constants). */
void gfpbits_find(const struct btf *btf, struct gfpbits *g);
static inline uint32_t gfpbits_huge_mask(const struct gfpbits *g)
{
	return g->movable | g->comp | g->nomemalloc;
}

#endif
