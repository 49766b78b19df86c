#include "unwind_table.h"

#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch.h"
#include "clock.h"
#include "elffile.h"
#include "log.h"
#include "unwind_cfi.h"

/* Where an FDE range came from; eh_frame wins any overlap. */
enum range_src { SRC_EH = 0, SRC_DEBUG = 1, SRC_PLT = 2 };

struct range {
	uint64_t lo, hi;
	uint32_t src;
};

struct ranges {
	struct range *v;
	size_t n, cap;
};

struct rows {
	struct profd_unwind_row *v;
	size_t n, cap;
};

struct builder {
	struct elffile *f;
	struct unwind_table *t;
	struct ranges ranges;
	struct rows rows;
	uint32_t entries; /* CIEs and FDEs read, both sections */
	const struct unwind_cfi_arch *arch; /* the file's machine's row compiler */
};

static int ranges_push(struct ranges *r, uint64_t lo, uint64_t hi, uint32_t src)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1024;
		struct range *v = reallocarray(r->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct range){lo, hi, src};
	return 0;
}

static int rows_push(struct rows *r, const struct profd_unwind_row *row)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 4096;
		struct profd_unwind_row *v = reallocarray(r->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = *row;
	return 0;
}

static bool same_rule(const struct profd_unwind_row *a, const struct profd_unwind_row *b)
{
	return a->cfa_type == b->cfa_type && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off &&
	       a->ra_off == b->ra_off;
}

/* Append a row at ELF vaddr pc unless it repeats the previous rule. */
static int add_row(struct builder *b, uint64_t pc, struct profd_unwind_row row)
{
	struct rows *r = &b->rows;

	row.pc = (uint32_t)(pc - b->t->pc_base);
	if (r->n && r->v[r->n - 1].pc == row.pc) {
		r->v[r->n - 1] = row; /* an empty row before (zero-length) */
		if (r->n > 1 && same_rule(&r->v[r->n - 2], &row))
			r->n--;
		return 0;
	}
	if (r->n && same_rule(&r->v[r->n - 1], &row))
		return 0;
	return rows_push(r, &row);
}

/* Rows for one FDE range, asking libdw for the state at each row start. */
static int emit_fde(struct builder *b, Dwarf_CFI *cfi, const struct range *rg)
{
	uint64_t addr = rg->lo;
	int err;

	if (rg->src == SRC_PLT) /* .plt without CFI: its entries jump, never call */
		return add_row(b, rg->lo, b->arch->plt_row);
	while (addr < rg->hi) {
		struct profd_unwind_row row = {0};
		Dwarf_Frame *fr = NULL;
		Dwarf_Addr start, end;

		if (dwarf_cfi_addrframe(cfi, addr, &fr) != 0 || !fr)
			return addr == rg->lo ? -ENOENT
					      : add_row(b, addr,
							(struct profd_unwind_row){
							    .cfa_type = PROFD_UNWIND_CFA_STOP});
		dwarf_frame_info(fr, &start, &end, NULL);
		b->arch->frame_to_row(fr, &row);
		free(fr);
		b->t->stats.rows_raw++;
		err = add_row(b, addr, row);
		if (err)
			return err;
		if (end <= addr || start > addr)
			break; /* libdw disagrees with the FDE bounds: let GAP follow */
		addr = end;
	}
	return 0;
}

/* ---- collecting the FDE ranges ---- */

/* Also refuses an empty or wrapped range (a hostile section size): rows
 * must come out sorted or the BPF binary search goes wrong. */
static bool in_exec_segment(const struct unwind_table *t, uint64_t lo, uint64_t hi)
{
	size_t i;

	if (hi <= lo)
		return false;
	for (i = 0; i < t->nsegs; i++) {
		const struct unwind_segment *s = &t->segs[i];

		if (lo >= s->vaddr && hi - s->vaddr <= s->filesz)
			return true;
	}
	return false;
}

static int collect_fdes(struct builder *b, struct unwind_cfi_src *s, uint32_t src)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(b->f->elf, NULL);
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	uint64_t lo, hi;
	int rc, err;

	while ((rc = dwarf_next_cfi(ident, s->data, s->eh, off, &next, &e)) == 0) {
		off = next;
		/* Work is per entry: the count, not the section's size, bounds
		 * it (a 256 MiB section holds millions of tiny FDEs). */
		if (++b->entries > UNWIND_TABLE_MAX_CFI_ENTRIES) {
			elffile_count_too_big();
			return -E2BIG;
		}
		if (dwarf_cfi_cie_p(&e))
			continue;
		/* FDEs of discarded sections (address 0) and junk fail here. */
		if (unwind_cfi_fde_range(s, ident, &e.fde, &lo, &hi) ||
		    !in_exec_segment(b->t, lo, hi)) {
			b->t->stats.fdes_skipped++;
			continue;
		}
		err = ranges_push(&b->ranges, lo, hi, src);
		if (err)
			return err;
	}
	if (rc < 0)
		log_debug("unwind_table: CFI section ends early: %s", dwarf_errmsg(-1));
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->src < y->src ? -1 : x->src > y->src;
}

/* Sort and drop overlaps.  Ranges are sorted by (lo, src), so at equal
 * starts eh_frame wins; a later range overlapping a kept one goes. */
static void normalize_ranges(struct builder *b)
{
	struct ranges *r = &b->ranges;
	size_t i, out = 0;

	if (!r->n)
		return;
	qsort(r->v, r->n, sizeof(*r->v), cmp_range);
	for (i = 0; i < r->n; i++) {
		if (out && r->v[i].lo < r->v[out - 1].hi) {
			if (r->v[out - 1].src != SRC_EH && r->v[i].src == SRC_EH &&
			    r->v[i].lo == r->v[out - 1].lo) {
				r->v[out - 1] = r->v[i];
			}
			b->t->stats.fdes_skipped++;
			continue;
		}
		r->v[out++] = r->v[i];
	}
	r->n = out;
}

/* .plt/.plt.sec/.plt.got with no FDE at all get the architecture's PLT
 * row ("CFA = rsp + 8" on x86-64). */
static int add_plt_sections(struct builder *b)
{
	static const char *const names[] = {".plt", ".plt.sec", ".plt.got"};
	size_t i, j;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		GElf_Shdr sh;
		bool covered = false;

		if (!elffile_find_section(b->f, names[i], &sh) || !sh.sh_size ||
		    !in_exec_segment(b->t, sh.sh_addr, sh.sh_addr + sh.sh_size))
			continue;
		for (j = 0; j < b->ranges.n && !covered; j++)
			covered = b->ranges.v[j].lo < sh.sh_addr + sh.sh_size &&
				  b->ranges.v[j].hi > sh.sh_addr;
		if (!covered &&
		    ranges_push(&b->ranges, sh.sh_addr, sh.sh_addr + sh.sh_size, SRC_PLT))
			return -ENOMEM;
	}
	return 0;
}

/* ---- assembling the table ---- */

static bool has_gap_after(const struct ranges *r, size_t i)
{
	return i + 1 == r->n || r->v[i + 1].lo > r->v[i].hi;
}

/* Row 0 at pc 0: the packed lookup (unwind_pack.h) relies on it.  Only
 * when the first FDE gave no row does it not hold by construction. */
static void rebase(struct builder *b)
{
	uint32_t first = b->rows.n ? b->rows.v[0].pc : 0;
	size_t i;

	if (!first)
		return;
	b->t->pc_base += first;
	for (i = 0; i < b->rows.n; i++)
		b->rows.v[i].pc -= first;
}

static int assemble(struct builder *b, Dwarf_CFI *eh, Dwarf_CFI *dbg)
{
	struct ranges *r = &b->ranges;
	struct unwind_table *t = b->t;
	size_t i;
	int err;

	normalize_ranges(b);
	if (!r->n)
		return 0;
	t->pc_base = r->v[0].lo;
	for (i = 0; i < r->n; i++) {
		const struct range *rg = &r->v[i];

		if (rg->hi - t->pc_base > UINT32_MAX) {
			t->stats.fdes_skipped++;
			continue;
		}
		err = emit_fde(b, rg->src == SRC_DEBUG ? dbg : eh, rg);
		if (err == -ENOENT)
			t->stats.fdes_skipped++;
		else if (err)
			return err;
		else if (rg->src == SRC_DEBUG)
			t->stats.fdes_debug++;
		if (!err && rg->src != SRC_PLT)
			t->stats.fdes++;
		/* Lookups past this FDE must not borrow its last rule; a
		 * following FDE that starts right here replaces this row. */
		if (has_gap_after(r, i) || err) {
			err = add_row(b, rg->hi,
				      (struct profd_unwind_row){.cfa_type = PROFD_UNWIND_CFA_GAP});
			if (err)
				return err;
		}
	}
	if (b->rows.n > PROFD_UNWIND_MAX_FILE_ROWS)
		return -E2BIG;
	rebase(b);
	return 0;
}

static int read_segments(struct elffile *f, struct unwind_table *t)
{
	size_t i;

	for (i = 0; i < f->phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(f->elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) || !ph.p_filesz)
			continue;
		if (t->nsegs == UNWIND_TABLE_MAX_SEGMENTS)
			break;
		t->segs[t->nsegs++] = (struct unwind_segment){ph.p_vaddr, ph.p_offset, ph.p_filesz};
	}
	return 0;
}

/* The .debug_frame CFI when the file has one (libdw owns the result). */
static int open_debug_frame(struct builder *b, Dwarf **dw, struct unwind_cfi_src *s)
{
	GElf_Shdr sh;
	Elf_Scn *scn = elffile_find_section(b->f, ".debug_frame", &sh);

	if (!scn || sh.sh_type != SHT_PROGBITS)
		return 0;
	/* dwarf_begin_elf reads (and inflates) every .debug section, not
	 * just this one: each must be within the cap first. */
	if (!elffile_sections_fit(b->f, ".debug", ELFFILE_MAX_SECTION_BYTES) ||
	    !elffile_sections_fit(b->f, ".zdebug", ELFFILE_MAX_SECTION_BYTES) ||
	    !elffile_sections_fit(b->f, ".gnu.debuglto_", ELFFILE_MAX_SECTION_BYTES))
		return 0;
	*dw = dwarf_begin_elf(b->f->elf, DWARF_C_READ, NULL);
	s->cfi = *dw ? dwarf_getcfi(*dw) : NULL;
	if (!s->cfi)
		return 0;
	/* libdw has decompressed the section in place if it was compressed. */
	s->data = elf_getdata(scn, NULL);
	if (!s->data || !s->data->d_buf || gelf_getshdr(scn, &sh) == NULL ||
	    (sh.sh_flags & SHF_COMPRESSED) || s->data->d_size > b->f->size * 64)
		s->cfi = NULL;
	return 0;
}

static int open_eh_frame(struct builder *b, struct unwind_cfi_src *s)
{
	GElf_Shdr sh;
	Elf_Scn *scn = elffile_find_section(b->f, ".eh_frame", &sh);

	/* lld types it SHT_X86_64_UNWIND, as the psABI says. */
	if (!scn || (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_X86_64_UNWIND))
		return 0;
	s->data = elffile_section_data(b->f, scn, &sh);
	if (!s->data)
		return 0;
	s->sh_addr = sh.sh_addr;
	s->eh = true;
	s->cfi = dwarf_getcfi_elf(b->f->elf);
	return 0;
}

/* The row compiler of a 64-bit little-endian ELF: only of the
 * architecture profd runs on, unless opts ask for any (tests of another
 * architecture's tables).  NULL: not a file we build a table for. */
static const struct unwind_cfi_arch *elf_arch(struct elffile *f,
					      const struct unwind_table_opts *opts)
{
	GElf_Ehdr eh;

	if (!gelf_getehdr(f->elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 || f->big_endian)
		return NULL;
	if (eh.e_machine != ARCH_ELF_MACHINE && !(opts && opts->any_machine))
		return NULL;
	return unwind_cfi_arch_for(eh.e_machine);
}

static int build(struct elffile *f, const struct unwind_table_opts *opts, struct unwind_table *t)
{
	struct unwind_cfi_src eh = {0}, dbg = {0};
	struct builder b = {.f = f, .t = t, .arch = elf_arch(f, opts)};
	Dwarf *dw = NULL;
	int err;

	if (!b.arch)
		return -EINVAL;
	err = read_segments(f, t);
	if (!err)
		err = open_eh_frame(&b, &eh);
	if (!err && !(opts && opts->no_debug_frame))
		err = open_debug_frame(&b, &dw, &dbg);
	if (!err && eh.cfi)
		err = collect_fdes(&b, &eh, SRC_EH);
	if (!err && dbg.cfi)
		err = collect_fdes(&b, &dbg, SRC_DEBUG);
	if (!err && b.ranges.n)
		err = add_plt_sections(&b);
	if (!err)
		err = assemble(&b, eh.cfi, dbg.cfi);
	if (eh.cfi)
		dwarf_cfi_end(eh.cfi);
	if (dw)
		dwarf_end(dw);
	free(b.ranges.v);
	if (err) {
		free(b.rows.v);
		return err;
	}
	t->rows = b.rows.v;
	t->nrows = b.rows.n;
	return 0;
}

static void count_rows(struct unwind_table *t)
{
	size_t i;

	for (i = 0; i < t->nrows; i++) {
		t->stats.rows_stop += t->rows[i].cfa_type == PROFD_UNWIND_CFA_STOP;
		t->stats.rows_plt += t->rows[i].cfa_type == PROFD_UNWIND_CFA_PLT;
	}
}

static int finish(struct elffile *f, const struct unwind_table_opts *opts, struct unwind_table *t,
		  uint64_t t0)
{
	int err = build(f, opts, t);

	elffile_close(f);
	if (err) {
		unwind_table_free(t);
		return err;
	}
	count_rows(t);
	t->stats.build_ns = clock_mono_ns() - t0;
	return 0;
}

int unwind_table_build_fd(int fd, const struct unwind_table_opts *opts, struct unwind_table *out)
{
	uint64_t t0 = clock_mono_ns();
	struct elffile f;
	int err;

	memset(out, 0, sizeof(*out));
	err = elffile_open_fd(&f, fd);
	return err ? err : finish(&f, opts, out, t0);
}

int unwind_table_build_mem(const void *image, size_t len, const struct unwind_table_opts *opts,
			   struct unwind_table *out)
{
	uint64_t t0 = clock_mono_ns();
	struct elffile f;
	int err;

	memset(out, 0, sizeof(*out));
	err = elffile_open_mem(&f, image, len);
	return err ? err : finish(&f, opts, out, t0);
}

void unwind_table_free(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	t->rows = NULL;
	t->nrows = 0;
}

const struct profd_unwind_row *unwind_table_lookup(const struct unwind_table *t, uint64_t vaddr)
{
	uint64_t pc = vaddr - t->pc_base;
	size_t lo = 0, hi = t->nrows;

	if (!t->nrows || vaddr < t->pc_base || pc > UINT32_MAX || pc < t->rows[0].pc)
		return NULL;
	while (hi - lo > 1) { /* invariant: rows[lo].pc <= pc < rows[hi].pc */
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return &t->rows[lo];
}

size_t unwind_table_bytes(const struct unwind_table *t)
{
	return t->nrows * sizeof(struct profd_unwind_row);
}

const char *unwind_cfa_name(unsigned int cfa_type)
{
	static const char *const names[] = {"gap",	 "rsp", "rbp",	"plt",
					    "rbp-deref", "end", "stop", "rsp-x8"};

	return cfa_type < sizeof(names) / sizeof(names[0]) ? names[cfa_type] : "?";
}
