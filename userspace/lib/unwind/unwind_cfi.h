/* unwind_cfi: the CFI-reading half of unwind_table, internal to it:
 * decode where an FDE applies, and turn one libdw frame state into one
 * struct profd_unwind_row (x86_64). */
#ifndef PROFD_UNWIND_CFI_H
#define PROFD_UNWIND_CFI_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>

#include "profd_abi_unwind.h"

/* One CFI section being read. */
struct unwind_cfi_src {
	Dwarf_CFI *cfi;
	Elf_Data *data;	  /* raw section, for dwarf_next_cfi */
	uint64_t sh_addr; /* vaddr of the section (pc-relative pointers) */
	bool eh;	  /* .eh_frame, else .debug_frame */
	uint64_t cie_off; /* one-entry CIE cache */
	uint8_t cie_enc;  /* its FDE pointer encoding */
	bool cie_valid;
};

/* [lo, hi) of one FDE; -1 when it cannot be decoded. */
int unwind_cfi_fde_range(struct unwind_cfi_src *s, const unsigned char *ident, const Dwarf_FDE *fde,
			 uint64_t *lo, uint64_t *hi);
/* The row for a frame state: a plain rule, END, or STOP. */
void unwind_cfi_frame_to_row(Dwarf_Frame *fr, struct profd_unwind_row *row);

#endif
