#include "unwind_pack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"

static uint64_t rule_value(const struct profd_unwind_row *r)
{
	struct profd_unwind_rule rule = {r->cfa_off, r->cfa_type, r->rbp_off, r->ra_off, {0}};
	uint64_t v;

	memcpy(&v, &rule, sizeof(v));
	return v;
}

/* Rule index of every row, the distinct rules in order of first use
 * into words[rules...] (PROFD_UNWIND_RULE_WORDS each).  0 or
 * -E2BIG/-ENOMEM. */
static int pack_rules(const struct unwind_table *t, struct unwind_packed *p, uint32_t *idx)
{
	struct hashmap seen;
	size_t i;
	int err = 0;

	hashmap_init(&seen);
	for (i = 0; i < t->nrows && !err; i++) {
		uint64_t w = rule_value(&t->rows[i]);
		uint64_t v;

		/* The hash map's keys are never 0; a rule's high half never
		 * has all bits set (its padding is zero). */
		if (hashmap_get(&seen, w + 1, &v)) {
			idx[i] = (uint32_t)v;
			continue;
		}
		if (p->nrules == PROFD_UNWIND_MAX_FILE_RULES) {
			err = -E2BIG;
			break;
		}
		idx[i] = p->nrules;
		/* room: at most one rule a row */
		memcpy(&p->words[p->rules + PROFD_UNWIND_RULE_WORDS * p->nrules++], &w, sizeof(w));
		if (hashmap_put(&seen, w + 1, idx[i]))
			err = -ENOMEM;
	}
	hashmap_free(&seen);
	return err;
}

/* Word p of the page index: the first row at or past page p. */
static void pack_pages(const struct unwind_table *t, uint32_t *pages, uint32_t npages)
{
	uint32_t p, r = 0;

	for (p = 0; p + 1 < npages; p++) {
		while (r < t->nrows && t->rows[r].pc >> PROFD_UNWIND_PAGE_BITS < p)
			r++;
		pages[p] = r;
	}
	pages[npages - 1] = (uint32_t)t->nrows;
}

int unwind_pack(const struct unwind_table *t, struct unwind_packed *out)
{
	uint32_t *idx, npages, i;
	int err;

	memset(out, 0, sizeof(*out));
	/* The search never compares a page's first candidate: row 0 must
	 * start at pc 0 (the builder's pc_base is its first FDE). */
	if (!t->nrows || t->nrows > PROFD_UNWIND_MAX_FILE_ROWS || t->rows[0].pc != 0)
		return -EINVAL;
	npages = (t->rows[t->nrows - 1].pc >> PROFD_UNWIND_PAGE_BITS) + 2;
	out->npages = npages;
	out->rules = npages;
	/* Rules come before rows, so the rows start once the rules are
	 * known: allocate for the worst case (a rule a row) and compact. */
	out->words =
	    calloc((size_t)npages + (PROFD_UNWIND_RULE_WORDS + 1) * t->nrows, sizeof(uint32_t));
	idx = calloc(t->nrows, sizeof(*idx));
	if (!out->words || !idx) {
		free(idx);
		unwind_packed_free(out);
		return -ENOMEM;
	}
	err = pack_rules(t, out, idx);
	if (err) {
		free(idx);
		unwind_packed_free(out);
		return err;
	}
	pack_pages(t, out->words, npages);
	out->rows = out->rules + PROFD_UNWIND_RULE_WORDS * out->nrules;
	out->nrows = (uint32_t)t->nrows;
	for (i = 0; i < out->nrows; i++)
		out->words[out->rows + i] =
		    PROFD_UNWIND_ENTRY(t->rows[i].pc & PROFD_UNWIND_PAGE_MASK, idx[i]);
	out->nwords = out->rows + out->nrows;
	free(idx);
	return 0;
}

void unwind_packed_free(struct unwind_packed *p)
{
	free(p->words);
	memset(p, 0, sizeof(*p));
}

/* Mirrors unwind_row_index() in bpf/unwind.bpf.h step for step. */
static int64_t search(const uint32_t *words, size_t nwords, uint32_t lo, uint32_t n, uint32_t low)
{
	uint32_t i, half, mid;

	for (i = 0; i < PROFD_UNWIND_PAGE_BITS + 2 && n > 1; i++) {
		half = n / 2;
		mid = lo + half;
		if (mid >= nwords)
			return -1;
		if (PROFD_UNWIND_ENTRY_PC(words[mid]) <= low)
			lo = mid;
		n -= half;
	}
	return n > 1 ? -1 : (int64_t)lo;
}

int unwind_packed_lookup(const uint32_t *words, size_t nwords, const struct unwind_packed_loc *loc,
			 uint32_t tpc, struct profd_unwind_rule *out)
{
	uint32_t page = tpc >> PROFD_UNWIND_PAGE_BITS, first, next, lo;
	uint64_t w;
	int64_t row;

	if ((uint64_t)page + 1 >= loc->npages || (uint64_t)loc->pages + page + 1 >= nwords)
		return -1;
	first = words[loc->pages + page];
	next = words[loc->pages + page + 1];
	lo = first ? first - 1 : 0;
	if (next <= lo)
		return -1;
	row = search(words, nwords, loc->rows + lo, next - lo, tpc & PROFD_UNWIND_PAGE_MASK);
	if (row < 0)
		return -1;
	w = (uint64_t)loc->rules + PROFD_UNWIND_RULE_WORDS * PROFD_UNWIND_ENTRY_RULE(words[row]);
	if (w + PROFD_UNWIND_RULE_WORDS > nwords)
		return -1;
	memcpy(out, &words[w], sizeof(*out));
	return 0;
}
