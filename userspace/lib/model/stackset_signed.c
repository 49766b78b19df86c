/* stackset_signed.c: profiles whose counts may be negative (the mmap
 * profile: bytes mapped, unmapped as negative).  Counts stay uint64 in
 * two's complement everywhere they are summed (aggregate cells, history,
 * the wire), which keeps sums exact; the formats that print numbers print
 * them signed, and those that draw widths take the split form. */
#include <stdlib.h>
#include <string.h>

#include "stackset.h"

#define SPLIT_MAX_DEPTH 4096 /* more than any stack profd keeps */

bool stackset_signed(const struct stackset *ss)
{
	return ss->type && !strcmp(ss->type, "mmap") && !ss->signs_split;
}

static int copy_meta(struct stackset *out, const struct stackset *ss)
{
	if (stackset_set_str(&out->title, ss->title) || stackset_set_str(&out->unit, ss->unit) ||
	    stackset_set_str(&out->type, ss->type))
		return -1;
	out->start_ns = ss->start_ns;
	out->end_ns = ss->end_ns;
	out->rate_hz = ss->rate_hz;
	out->signs_split = true;
	return 0;
}

/* Stack st of ss under root (a frame id of out), its count made positive. */
static int add_under(struct stackset *out, const struct stackset *ss, const struct ss_stack *st,
		     uint32_t root, uint32_t *ids)
{
	int64_t v = (int64_t)st->count;
	uint32_t d;

	ids[0] = root;
	for (d = 0; d < st->depth; d++) {
		int64_t id = stackset_copy_frame(out, ss, st->frames[d]);

		if (id < 0)
			return (int)id;
		ids[d + 1] = (uint32_t)id;
	}
	return stackset_add(out, ids, st->depth + 1, v < 0 ? (uint64_t)-v : (uint64_t)v);
}

struct stackset *stackset_split_signs(const struct stackset *ss)
{
	struct stackset *out = stackset_new();
	int64_t mapped, unmapped;
	uint32_t *ids = NULL;
	size_t i;

	if (!out || copy_meta(out, ss))
		goto fail;
	mapped = stackset_intern(out, FRAME_ROOT, "[mapped]");
	unmapped = stackset_intern(out, FRAME_ROOT, "[unmapped]");
	ids = malloc((SPLIT_MAX_DEPTH + 1) * sizeof(*ids));
	if (mapped < 0 || unmapped < 0 || !ids)
		goto fail;
	for (i = 0; i < ss->nstacks; i++) {
		const struct ss_stack *st = &ss->stacks[i];

		if (!st->count || st->depth > SPLIT_MAX_DEPTH)
			continue;
		if (add_under(out, ss, st, (uint32_t)((int64_t)st->count < 0 ? unmapped : mapped),
			      ids))
			goto fail;
	}
	free(ids);
	return out;
fail:
	free(ids);
	stackset_free(out);
	return NULL;
}
