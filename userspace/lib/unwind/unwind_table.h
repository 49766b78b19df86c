/* unwind_table: turn one ELF file's call frame information (.eh_frame,
 * and .debug_frame where .eh_frame leaves code uncovered) into the
 * compact sorted row table the in-kernel unwinder binary-searches
 * (struct profd_unwind_row; x86-64 and arm64).  libdw evaluates the CFI;
 * we keep only what a stack walk needs: the CFA rule, the saved frame
 * pointer and where the return address is.  Rules we cannot express
 * become STOP rows (the stack is then marked truncated, never wrong) and
 * PCs no FDE covers become GAP rows, so a lookup between functions fails
 * cleanly instead of borrowing its neighbour's rule.  Everything read from
 * the file is treated as hostile. */
#ifndef PROFD_UNWIND_TABLE_H
#define PROFD_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profd_abi_unwind.h"

/* One executable PT_LOAD segment: what maps file offsets to vaddrs. */
struct unwind_segment {
	uint64_t vaddr, offset, filesz;
};

#define UNWIND_TABLE_MAX_SEGMENTS 8
/* CIEs and FDEs read from one file: libLLVM has ~100k FDEs and builds in
 * about a second, so this bounds a hostile file to about ten seconds of
 * one table build where its section cap alone would allow minutes.  A
 * file over it falls back to frame pointers (-E2BIG, counted in
 * elffile_too_big). */
#define UNWIND_TABLE_MAX_CFI_ENTRIES (1u << 20)

struct unwind_table_stats {
	uint32_t fdes;	       /* FDEs turned into rows */
	uint32_t fdes_debug;   /* of those, from .debug_frame */
	uint32_t fdes_skipped; /* unreadable, overlapping or outside the pc range */
	uint32_t rows_raw;     /* CFI rows before merging */
	uint32_t rows_stop;    /* STOP rows (unsupported rules) after merging */
	uint32_t rows_plt;     /* PLT rows */
	uint64_t build_ns;     /* wall time of unwind_table_build_*() */
};

struct unwind_table {
	uint64_t pc_base;	       /* ELF vaddr of row pc 0 */
	struct profd_unwind_row *rows; /* sorted by pc, ends with a GAP row */
	size_t nrows;
	struct unwind_segment segs[UNWIND_TABLE_MAX_SEGMENTS]; /* executable PT_LOADs */
	size_t nsegs;
	struct unwind_table_stats stats;
};

struct unwind_table_opts {
	bool no_debug_frame; /* ignore .debug_frame (tests) */
	bool any_machine;    /* any architecture with a row compiler, not only ours (tests) */
};

/* Build from an open ELF file (fd not closed, not kept) or an in-memory
 * image (the vdso).  opts may be NULL.  A file without any CFI gives 0
 * with nrows == 0 (the caller then falls back to frame pointers).
 * 0 or -errno: -EINVAL not a usable ELF of our architecture, -E2BIG more rows than
 * PROFD_UNWIND_MAX_FILE_ROWS or CFI entries than
 * UNWIND_TABLE_MAX_CFI_ENTRIES, -ENOMEM. */
int unwind_table_build_fd(int fd, const struct unwind_table_opts *opts, struct unwind_table *out);
int unwind_table_build_mem(const void *image, size_t len, const struct unwind_table_opts *opts,
			   struct unwind_table *out);
void unwind_table_free(struct unwind_table *t);

/* The row in effect at ELF vaddr, exactly as the BPF side finds it (the
 * last row with pc <= vaddr - pc_base), or NULL when vaddr is outside
 * the table. */
const struct profd_unwind_row *unwind_table_lookup(const struct unwind_table *t, uint64_t vaddr);
/* Bytes the rows take in the BPF map. */
size_t unwind_table_bytes(const struct unwind_table *t);
/* Name of a enum profd_unwind_cfa value, for diagnostics. */
const char *unwind_cfa_name(unsigned int cfa_type);

#endif
