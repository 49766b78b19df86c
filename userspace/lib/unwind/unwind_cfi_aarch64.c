/* unwind_cfi_aarch64: AArch64 CFI into rows (DWARF for the Arm 64-bit
 * architecture).  The CFA is sp or x29 plus an offset; the return address
 * column is x30, the link register: "same value" until a function saves
 * it (a leaf never does), then at some CFA offset, usually just above the
 * saved x29 of the frame record.  Pointer authentication
 * (DW_CFA_AARCH64_negate_ra_state) changes only how the saved value is
 * signed: the walker strips the signature, so the rows ignore it. */
#include "unwind_cfi.h"

#include <dwarf.h>
#include <elf.h>

/* DWARF register numbers: x29 (frame pointer), x30 (link register), sp. */
#define REG_X29 29
#define REG_X30 30
#define REG_SP 31

/* A saved register's CFA offset as a row's 8-byte unit: negative, 8-byte
 * aligned and within an s8 (or 0 for CFA - 8 when ra is true: the
 * rows' default place for the return address). */
static bool slot_off(int64_t off, bool ra, int8_t *out)
{
	if (off >= 0 || off % 8 != 0 || off / 8 < INT8_MIN)
		return false;
	*out = (int8_t)(ra && off == -8 ? 0 : off / 8);
	return true;
}

/* CFA = sp or x29 + offset; false for anything else (expressions). */
static bool cfa_rule(Dwarf_Frame *fr, struct profd_unwind_row *row)
{
	Dwarf_Op *ops;
	size_t n;
	int64_t off;

	if (dwarf_frame_cfa(fr, &ops, &n) != 0 || n != 1 || ops[0].atom != DW_OP_bregx)
		return false;
	off = (int64_t)ops[0].number2;
	if (ops[0].number == REG_SP && !unwind_cfi_fits_s16(off) && off % 8 == 0 &&
	    unwind_cfi_fits_s16(off / 8)) {
		row->cfa_type = PROFD_UNWIND_CFA_RSP_X8; /* big local arrays */
		row->cfa_off = (int16_t)(off / 8);
		return true;
	}
	if ((ops[0].number != REG_SP && ops[0].number != REG_X29) || !unwind_cfi_fits_s16(off))
		return false;
	row->cfa_type = ops[0].number == REG_SP ? PROFD_UNWIND_CFA_SP : PROFD_UNWIND_CFA_FP;
	row->cfa_off = (int16_t)off;
	return true;
}

/* The return address: in x30 (same value) or saved at a CFA offset. */
static bool ra_rule(enum unwind_cfi_saved k, int64_t off, struct profd_unwind_row *row)
{
	if (k == UNWIND_CFI_SAME) {
		row->ra_off = PROFD_UNWIND_RA_LR;
		return true;
	}
	return k == UNWIND_CFI_AT_CFA && slot_off(off, true, &row->ra_off);
}

/* The caller's x29: unchanged, or saved at a CFA offset. */
static bool fp_rule(Dwarf_Frame *fr, struct profd_unwind_row *row)
{
	int64_t off;
	enum unwind_cfi_saved k = unwind_cfi_saved(fr, REG_X29, &off);

	row->rbp_off = 0;
	if (k == UNWIND_CFI_SAME)
		return true;
	return k == UNWIND_CFI_AT_CFA && slot_off(off, false, &row->rbp_off);
}

static void frame_to_row(Dwarf_Frame *fr, struct profd_unwind_row *row)
{
	bool signal = false;
	int ra = dwarf_frame_info(fr, NULL, NULL, &signal);
	int64_t ra_off = 0;
	enum unwind_cfi_saved k =
	    ra == REG_X30 ? unwind_cfi_saved(fr, REG_X30, &ra_off) : UNWIND_CFI_OTHER;

	row->cfa_off = 0;
	row->rbp_off = 0;
	row->ra_off = 0;
	if (k == UNWIND_CFI_UNDEFINED) {
		row->cfa_type = PROFD_UNWIND_CFA_END; /* _start, thread start: nothing called us */
		return;
	}
	/* Signal frames resume at an exact pc from a saved context: not ours. */
	if (signal || !cfa_rule(fr, row) || !ra_rule(k, ra_off, row) || !fp_rule(fr, row))
		unwind_cfi_stop_row(row);
}

/* A .plt entry branches through x16/x17 and touches neither sp nor x30:
 * the caller's return address is still in x30. */
const struct unwind_cfi_arch unwind_cfi_aarch64 = {
    .machine = EM_AARCH64,
    .frame_to_row = frame_to_row,
    .plt_row = {.cfa_type = PROFD_UNWIND_CFA_SP, .cfa_off = 0, .ra_off = PROFD_UNWIND_RA_LR},
};
