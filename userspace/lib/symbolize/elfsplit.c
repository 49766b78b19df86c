#include "elfsplit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Jumps looked at per function, and distinct target ranges counted. */
#define SPLIT_MAX_TARGETS 512
#define SPLIT_MAX_RANGES 16

struct split_range {
	uint64_t start, end;
	unsigned int hits;
};

/* The executable section holding [start, end), its bytes checked. */
static const uint8_t *function_bytes(struct elffile *f, uint64_t start, uint64_t end, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(f->elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, sh) || sh->sh_type != SHT_PROGBITS ||
		    !(sh->sh_flags & SHF_EXECINSTR))
			continue;
		if (start < sh->sh_addr || end > sh->sh_addr + sh->sh_size || start >= end)
			continue;
		d = elffile_section_data(f, scn, sh);
		if (!d || !d->d_buf || d->d_size != sh->sh_size)
			return NULL;
		return (const uint8_t *)d->d_buf + (start - sh->sh_addr);
	}
	return NULL;
}

/* Targets of every byte pattern that encodes a rel32 jmp (e9) or jcc
 * (0f 80..8f) leaving [start, end) but staying in the section.  The bytes
 * are not decoded: a pattern inside another instruction gives a stray
 * target, which the FDE and hit-count tests below weed out. */
static size_t jump_targets(const uint8_t *code, uint64_t start, uint64_t end, const GElf_Shdr *sh,
			   uint64_t *out)
{
	uint64_t len = end - start, i;
	size_t n = 0;

	for (i = 0; i + 5 <= len && n < SPLIT_MAX_TARGETS; i++) {
		unsigned int width = 0;
		int32_t rel;
		uint64_t t;

		if (code[i] == 0xe9)
			width = 5;
		else if (code[i] == 0x0f && i + 6 <= len && (code[i + 1] & 0xf0) == 0x80)
			width = 6;
		if (!width)
			continue;
		memcpy(&rel, code + i + width - 4, sizeof(rel));
		t = start + i + width + (uint64_t)(int64_t)rel;
		if ((t < start || t >= end) && t >= sh->sh_addr && t < sh->sh_addr + sh->sh_size)
			out[n++] = t;
	}
	return n;
}

static void count_range(struct split_range *r, size_t *nr, uint64_t s, uint64_t e)
{
	size_t i;

	for (i = 0; i < *nr; i++) {
		if (r[i].start == s && r[i].end == e) {
			r[i].hits++;
			return;
		}
	}
	if (*nr < SPLIT_MAX_RANGES)
		r[(*nr)++] = (struct split_range){s, e, 1};
}

/* .eh_frame_hdr's sorted table of FDE start addresses, in the encoding
 * every linker writes (version 1, table of datarel sdata4 pairs). */
struct fde_table {
	const uint8_t *rows;
	uint64_t hdr_addr;
	uint32_t n;
};

static int fde_table(struct elffile *f, struct fde_table *t)
{
	GElf_Shdr sh;
	Elf_Scn *scn = elffile_find_section(f, ".eh_frame_hdr", &sh);
	Elf_Data *d = scn ? elffile_section_data(f, scn, &sh) : NULL;
	const uint8_t *p;
	uint32_t n;

	if (!d || !d->d_buf || d->d_size < 12)
		return -ENOENT;
	p = d->d_buf;
	/* version 1, eh_frame_ptr pcrel|sdata4, count udata4, table datarel|sdata4 */
	if (p[0] != 1 || p[1] != 0x1b || p[2] != 0x03 || p[3] != 0x3b)
		return -ENOENT;
	memcpy(&n, p + 8, sizeof(n));
	if (n < 2 || n > (d->d_size - 12) / 8)
		return -ENOENT;
	*t = (struct fde_table){p + 12, sh.sh_addr, n};
	return 0;
}

static uint64_t fde_start(const struct fde_table *t, uint32_t i)
{
	int32_t rel;

	memcpy(&rel, t->rows + 8 * (size_t)i, sizeof(rel));
	return t->hdr_addr + (uint64_t)(int64_t)rel;
}

/* The FDE holding addr, up to where the next one starts; false for the
 * last one (no end known) and addresses before the first. */
static bool fde_range(const struct fde_table *t, uint64_t addr, uint64_t *s, uint64_t *e)
{
	uint32_t lo = 0, hi = t->n;

	if (addr < fde_start(t, 0))
		return false;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (fde_start(t, mid) <= addr)
			lo = mid;
		else
			hi = mid;
	}
	if (lo + 1 >= t->n)
		return false;
	*s = fde_start(t, lo);
	*e = fde_start(t, lo + 1);
	return *s < *e;
}

int elfsplit_find(struct elffile *f, uint64_t start, uint64_t end, uint64_t *part_start,
		  uint64_t *part_end)
{
	struct split_range ranges[SPLIT_MAX_RANGES];
	const struct split_range *best = NULL;
	struct fde_table fdes;
	uint64_t *targets;
	const uint8_t *code;
	GElf_Shdr sh;
	size_t n, nr = 0, i;

	code = function_bytes(f, start, end, &sh);
	if (!code || fde_table(f, &fdes))
		return -ENOENT;
	targets = malloc(SPLIT_MAX_TARGETS * sizeof(*targets));
	if (!targets)
		return -ENOMEM;
	n = jump_targets(code, start, end, &sh, targets);
	for (i = 0; i < n; i++) {
		uint64_t s, e;

		if (fde_range(&fdes, targets[i], &s, &e) && (e <= start || s >= end))
			count_range(ranges, &nr, s, e);
	}
	free(targets);
	for (i = 0; i < nr; i++)
		if (ranges[i].hits >= ELFSPLIT_MIN_JUMPS && (!best || ranges[i].hits > best->hits))
			best = &ranges[i];
	if (!best)
		return -ENOENT;
	*part_start = best->start;
	*part_end = best->end;
	return 0;
}
