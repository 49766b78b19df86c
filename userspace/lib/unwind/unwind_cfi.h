/* unwind_cfi: the CFI-reading half of unwind_table, internal to it:
 * decode where an FDE applies, and turn one libdw frame state into one
 * struct profd_unwind_row.  The rows mean the same on every architecture;
 * what differs (registers, where the return address starts, the PLT)
 * is one compiler per architecture (unwind_cfi_<arch>.c), chosen by the
 * ELF file's machine, so any host can build any architecture's table. */
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

/* One architecture's row compiler. */
struct unwind_cfi_arch {
	unsigned int machine; /* ELF e_machine */
	/* The row for a frame state: a plain rule, END, or STOP. */
	void (*frame_to_row)(Dwarf_Frame *fr, struct profd_unwind_row *row);
	/* The row of a .plt section without CFI (pc 0: set by the caller). */
	struct profd_unwind_row plt_row;
};

extern const struct unwind_cfi_arch unwind_cfi_x86_64;
extern const struct unwind_cfi_arch unwind_cfi_aarch64;

/* The compiler for an ELF machine; NULL when there is none. */
const struct unwind_cfi_arch *unwind_cfi_arch_for(unsigned int e_machine);

/* [lo, hi) of one FDE; -1 when it cannot be decoded. */
int unwind_cfi_fde_range(struct unwind_cfi_src *s, const unsigned char *ident, const Dwarf_FDE *fde,
			 uint64_t *lo, uint64_t *hi);

/* ---- for the compilers ---- */

/* How a frame state recovers the caller's value of a register. */
enum unwind_cfi_saved {
	UNWIND_CFI_SAME,      /* unchanged (still in the register) */
	UNWIND_CFI_UNDEFINED, /* not recoverable: the outermost frame for the RA */
	UNWIND_CFI_AT_CFA,    /* saved at CFA + *off */
	UNWIND_CFI_OTHER,     /* any other rule */
};
enum unwind_cfi_saved unwind_cfi_saved(Dwarf_Frame *fr, int reg, int64_t *off);
bool unwind_cfi_fits_s16(int64_t v);
/* Make row a STOP row (a rule the walker cannot follow). */
void unwind_cfi_stop_row(struct profd_unwind_row *row);

#endif
