#include "unwind_cfi.h"

#include <dwarf.h>
#include <elf.h>

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

/* ---- what every architecture's row compiler shares ---- */

bool unwind_cfi_fits_s16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

enum unwind_cfi_saved unwind_cfi_saved(Dwarf_Frame *fr, int reg, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	*off = 0;
	if (dwarf_frame_register(fr, reg, mem, &ops, &n) != 0)
		return UNWIND_CFI_OTHER;
	if (n == 0)
		return ops ? UNWIND_CFI_UNDEFINED : UNWIND_CFI_SAME;
	if (ops[0].atom != DW_OP_call_frame_cfa || n > 2)
		return UNWIND_CFI_OTHER;
	if (n == 2) {
		if (ops[1].atom != DW_OP_plus_uconst)
			return UNWIND_CFI_OTHER;
		*off = (int64_t)ops[1].number;
	}
	return UNWIND_CFI_AT_CFA;
}

void unwind_cfi_stop_row(struct profd_unwind_row *row)
{
	row->cfa_type = PROFD_UNWIND_CFA_STOP;
	row->cfa_off = 0;
	row->rbp_off = 0;
	row->ra_off = 0;
}

const struct unwind_cfi_arch *unwind_cfi_arch_for(unsigned int e_machine)
{
	static const struct unwind_cfi_arch *const all[] = {&unwind_cfi_x86_64,
							    &unwind_cfi_aarch64};
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i]->machine == e_machine)
			return all[i];
	return NULL;
}
