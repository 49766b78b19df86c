#include "gfpbits.h"

#include <bpf/btf.h>
#include <string.h>

/* Bit numbers every kernel before the enum used for these flags. */
#define MOVABLE_BIT 3
#define COMP_BIT 18
#define NOMEMALLOC_BIT 19

/* The value of the enumerator named name among btf's enums: 0 or -1. */
static int enum_value(const struct btf *btf, const char *name, long long *v)
{
	uint32_t id, n = btf__type_cnt(btf);
	int i;

	for (id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const struct btf_enum *e;

		if (!btf_is_enum(t))
			continue;
		e = btf_enum(t);
		for (i = 0; i < btf_vlen(t); i++)
			if (!strcmp(btf__name_by_offset(btf, e[i].name_off), name)) {
				*v = e[i].val;
				return 0;
			}
	}
	return -1;
}

void gfpbits_find(const struct btf *btf, struct gfpbits *g)
{
	long long m, c, nm;

	*g = (struct gfpbits){ 1u << MOVABLE_BIT, 1u << COMP_BIT, 1u << NOMEMALLOC_BIT, false };
	if (!btf || enum_value(btf, "___GFP_MOVABLE_BIT", &m) ||
	    enum_value(btf, "___GFP_COMP_BIT", &c) || enum_value(btf, "___GFP_NOMEMALLOC_BIT", &nm))
		return;
	if (m < 0 || m > 31 || c < 0 || c > 31 || nm < 0 || nm > 31)
		return;
	*g = (struct gfpbits){ 1u << m, 1u << c, 1u << nm, true };
}
