/* unwind_cfi_x86_64: x86-64 CFI into rows (System V psABI).  The return
 * address is always at CFA - 8; gas's .plt expression and gcc's stack
 * realignment (DRAP) are matched by their opcodes. */
#include "unwind_cfi.h"

#include <dwarf.h>
#include <elf.h>

/* DWARF register numbers: rbp, rsp, and rip (the return address column). */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RIP 16



static int64_t sword(Dwarf_Word w)
{
	return (int64_t)w;
}

#define fits_s16 unwind_cfi_fits_s16

/* The x86_64 PLT expression gas emits for .plt:
 * rsp + 8 + (((rip & 15) >= K) << 3).  Returns K or -1. */
static int plt_threshold(const Dwarf_Op *ops, size_t n)
{
	if (n != 9 || ops[0].atom != DW_OP_breg7 || ops[0].number != 8 ||
	    ops[1].atom != DW_OP_breg16 || ops[1].number != 0 || ops[2].atom != DW_OP_lit15 ||
	    ops[3].atom != DW_OP_and || ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15 ||
	    ops[5].atom != DW_OP_ge || ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl ||
	    ops[8].atom != DW_OP_plus)
		return -1;
	return ops[4].atom - DW_OP_lit0;
}

/* CFA rule into row; false when it cannot be expressed. */
static bool cfa_rule(Dwarf_Frame *fr, struct profd_unwind_row *row)
{
	Dwarf_Op *ops;
	size_t n;
	int k;

	if (dwarf_frame_cfa(fr, &ops, &n) != 0 || n == 0)
		return false;
	if (n == 1 && ops[0].atom == DW_OP_bregx) {
		int64_t off = sword(ops[0].number2);

		if (ops[0].number == REG_RSP && !fits_s16(off) && off % 8 == 0 &&
		    fits_s16(off / 8)) {
			row->cfa_type = PROFD_UNWIND_CFA_RSP_X8; /* big local arrays */
			row->cfa_off = (int16_t)(off / 8);
			return true;
		}
		if ((ops[0].number != REG_RSP && ops[0].number != REG_RBP) || !fits_s16(off))
			return false;
		row->cfa_type =
		    ops[0].number == REG_RSP ? PROFD_UNWIND_CFA_RSP : PROFD_UNWIND_CFA_RBP;
		row->cfa_off = (int16_t)off;
		return true;
	}
	/* Stack realignment (DRAP): the CFA was saved just below rbp. */
	if (n == 2 && ops[0].atom == DW_OP_breg6 && ops[1].atom == DW_OP_deref &&
	    fits_s16(sword(ops[0].number))) {
		row->cfa_type = PROFD_UNWIND_CFA_RBP_DEREF;
		row->cfa_off = (int16_t)sword(ops[0].number);
		return true;
	}
	k = plt_threshold(ops, n);
	if (k < 0)
		return false;
	row->cfa_type = PROFD_UNWIND_CFA_PLT;
	row->cfa_off = (int16_t)k;
	return true;
}

/* Offset N of an "at CFA + N" register rule; 0 and true when the
 * register is unchanged or undefined; false for anything else. */
static bool saved_at_cfa(Dwarf_Frame *fr, int reg, int64_t *off, bool *undefined)
{
	enum unwind_cfi_saved k = unwind_cfi_saved(fr, reg, off);

	*undefined = k == UNWIND_CFI_UNDEFINED;
	return k != UNWIND_CFI_OTHER;
}

/* gcc's DRAP prologue (push rbp; mov rsp, rbp) leaves the caller's rbp
 * at [rbp]: DW_CFA_expression rbp: DW_OP_breg6 0, which libdw hands back
 * with the CFA pushed first. */
static bool rbp_saved_at_rbp(Dwarf_Frame *fr)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	return dwarf_frame_register(fr, REG_RBP, mem, &ops, &n) == 0 && n == 2 &&
	       ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_breg6 &&
	       ops[1].number == 0;
}

/* The caller's rbp for a row with a plain CFA rule: unchanged, or saved
 * at CFA + 8 * n with n fitting rbp_off. */
static bool rbp_rule(Dwarf_Frame *fr, struct profd_unwind_row *row)
{
	int64_t off;
	bool undefined;

	if (!saved_at_cfa(fr, REG_RBP, &off, &undefined) || off % 8 != 0 || off / 8 < INT8_MIN ||
	    off / 8 > INT8_MAX)
		return false;
	row->rbp_off = (int8_t)(off / 8);
	return true;
}

static void frame_to_row(Dwarf_Frame *fr, struct profd_unwind_row *row)
{
	int64_t ra_off = 0;
	bool ra_undef = false, signal = false, ok;
	int ra = dwarf_frame_info(fr, NULL, NULL, &signal);
	bool ra_ok = ra == REG_RIP && saved_at_cfa(fr, REG_RIP, &ra_off, &ra_undef);

	row->rbp_off = 0;
	row->cfa_off = 0;
	row->ra_off = 0; /* CFA - 8, always */
	if (ra_ok && ra_undef) {
		row->cfa_type = PROFD_UNWIND_CFA_END; /* _start, clone: nothing called us */
		return;
	}
	/* Signal frames resume at an exact pc from a saved context: not ours. */
	ok = ra_ok && !signal && ra_off == -8 && cfa_rule(fr, row);
	if (ok && row->cfa_type == PROFD_UNWIND_CFA_RBP_DEREF)
		ok = rbp_saved_at_rbp(fr); /* the row type implies it */
	else if (ok)
		ok = rbp_rule(fr, row);
	if (!ok)
		unwind_cfi_stop_row(row);
}

/* A .plt entry jumps and never calls: the return address is where the
 * caller's call put it, at the top of the stack. */
const struct unwind_cfi_arch unwind_cfi_x86_64 = {
    .machine = EM_X86_64,
    .frame_to_row = frame_to_row,
    .plt_row = {.cfa_type = PROFD_UNWIND_CFA_RSP, .cfa_off = 8},
};
