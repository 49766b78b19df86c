/* unwind_pack: the packed form of an unwind table that the in-kernel
 * unwinder reads (profd_abi_unwind.h, "Packed tables"): a page index,
 * the file's distinct rules, and one 32-bit word per row (the pc's low
 * bits and a rule index).  Half the bytes of the built rows, and a lookup
 * searches one page's rows instead of the whole file's. */
#ifndef PROFD_UNWIND_PACK_H
#define PROFD_UNWIND_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "unwind_table.h"

struct unwind_packed {
	uint32_t *words; /* pages, then rules, then rows */
	uint32_t nwords;
	uint32_t npages; /* page-index words (pages + 1) */
	uint32_t rules;	 /* word index of the rules */
	uint32_t nrules;
	uint32_t rows; /* word index of the rows */
	uint32_t nrows;
};

/* Pack t (sorted rows, as unwind_table_build_*() gives them).  0, or
 * -E2BIG more distinct rules than PROFD_UNWIND_MAX_FILE_RULES, -EINVAL no
 * rows, -ENOMEM. */
int unwind_pack(const struct unwind_table *t, struct unwind_packed *out);
void unwind_packed_free(struct unwind_packed *p);

/* Where a packed table lies in a word array (the mmapped unwind_rows). */
struct unwind_packed_loc {
	uint32_t pages, npages, rules, rows;
};

/* The rule in effect at row pc tpc, found exactly as bpf/unwind.bpf.h
 * finds it (same page step, same binary search) in words[0, nwords):
 * the userspace reference for the BPF lookup.  0, or -1 when tpc is past
 * the table or an index leaves the array. */
int unwind_packed_lookup(const uint32_t *words, size_t nwords, const struct unwind_packed_loc *loc,
			 uint32_t tpc, struct profd_unwind_rule *out);

#endif
