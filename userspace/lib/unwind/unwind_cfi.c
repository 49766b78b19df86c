#include "unwind_cfi.h"

#include <dwarf.h>

#include "arch.h"

/* The registers the rows name (arch.h).  The expressions matched below
 * by opcode (DW_OP_breg6/7/16: the PLT and DRAP forms) are x86-64's, as
 * are the rows themselves (ARCH_HAS_UNWIND_TABLES). */
#define REG_RBP ARCH_DWARF_REG_FP
#define REG_RSP ARCH_DWARF_REG_SP
#define REG_RIP ARCH_DWARF_REG_RA

/* ---- FDE address decoding (dwarf_next_cfi leaves it to us) ---- */

static int enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	default:
		return -1; /* uleb/sleb: never used for FDE addresses in practice */
	}
}

static uint64_t read_enc(const uint8_t *p, uint8_t enc)
{
	uint64_t v = 0;
	int n = enc_size(enc), i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	if ((enc & 0x0f) == DW_EH_PE_sdata4)
		v = (uint64_t)(int64_t)(int32_t)v;
	else if ((enc & 0x0f) == DW_EH_PE_sdata2)
		v = (uint64_t)(int64_t)(int16_t)v;
	return v;
}

/* The 'R' byte of a CIE's "z..." augmentation: how FDE addresses are
 * encoded.  -1 for augmentations we cannot walk. */
static int cie_fde_encoding(const Dwarf_CIE *cie)
{
	const uint8_t *d = cie->augmentation_data;
	const uint8_t *end = d ? d + cie->augmentation_data_size : NULL;
	const char *a = cie->augmentation;
	int n;

	if (!a || a[0] != 'z')
		return a && a[0] == '\0' ? DW_EH_PE_absptr : -1;
	for (a++; *a; a++) {
		if (*a == 'R')
			return d && d < end ? *d : -1;
		if (*a == 'L') {
			d++;
		} else if (*a == 'P') {
			if (!d || d >= end || (n = enc_size(*d)) < 0)
				return -1;
			d += 1 + n;
		} else if (*a != 'S' && *a != 'B') {
			return -1;
		}
	}
	return DW_EH_PE_absptr;
}

static int fde_encoding(struct unwind_cfi_src *s, const unsigned char *ident, Dwarf_Off cie_off)
{
	Dwarf_CFI_Entry e;
	Dwarf_Off next;
	int enc;

	if (!s->eh)
		return DW_EH_PE_absptr; /* .debug_frame: plain target addresses */
	if (s->cie_valid && s->cie_off == cie_off)
		return s->cie_enc;
	if (dwarf_next_cfi(ident, s->data, true, cie_off, &next, &e) != 0 || !dwarf_cfi_cie_p(&e))
		return -1;
	enc = cie_fde_encoding(&e.cie);
	if (enc < 0)
		return -1;
	s->cie_off = cie_off;
	s->cie_enc = (uint8_t)enc;
	s->cie_valid = true;
	return enc;
}

/* [lo, hi) of one FDE, or -1 if we cannot decode it. */
int unwind_cfi_fde_range(struct unwind_cfi_src *s, const unsigned char *ident, const Dwarf_FDE *fde,
			 uint64_t *lo, uint64_t *hi)
{
	const uint8_t *base = s->data->d_buf;
	int enc = fde_encoding(s, ident, fde->CIE_pointer);
	int n = enc < 0 ? -1 : enc_size((uint8_t)enc);
	uint64_t len;

	if (n < 0 || (enc & 0x70) > DW_EH_PE_pcrel || (enc & DW_EH_PE_indirect) ||
	    fde->end - fde->start < 2 * n)
		return -1;
	*lo = read_enc(fde->start, (uint8_t)enc);
	if ((enc & 0x70) == DW_EH_PE_pcrel)
		*lo += s->sh_addr + (uint64_t)(fde->start - base);
	len = read_enc(fde->start + n, (uint8_t)(enc & 0x0f));
	*hi = *lo + len;
	return *hi > *lo ? 0 : -1;
}

/* ---- turning one libdw frame state into one row ---- */

static int64_t sword(Dwarf_Word w)
{
	return (int64_t)w;
}

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

static bool fits_s16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
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
	Dwarf_Op mem[3], *ops;
	size_t n;

	*off = 0;
	*undefined = false;
	if (dwarf_frame_register(fr, reg, mem, &ops, &n) != 0)
		return false;
	if (n == 0) {
		*undefined = ops != NULL;
		return true;
	}
	if (ops[0].atom != DW_OP_call_frame_cfa || n > 2)
		return false;
	if (n == 2) {
		if (ops[1].atom != DW_OP_plus_uconst)
			return false;
		*off = sword(ops[1].number);
	}
	return true;
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

void unwind_cfi_frame_to_row(Dwarf_Frame *fr, struct profd_unwind_row *row)
{
	int64_t ra_off = 0;
	bool ra_undef = false, signal = false, ok;
	int ra = dwarf_frame_info(fr, NULL, NULL, &signal);
	bool ra_ok = ra == REG_RIP && saved_at_cfa(fr, REG_RIP, &ra_off, &ra_undef);

	row->rbp_off = 0;
	row->cfa_off = 0;
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
	if (!ok) {
		row->cfa_type = PROFD_UNWIND_CFA_STOP;
		row->cfa_off = 0;
		row->rbp_off = 0;
	}
}
