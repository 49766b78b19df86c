/* libFuzzer target: the /proc/PID/maps parser.  A parsed table must be
 * sorted, its mappings non-empty, every path a string inside the block,
 * and lookups must agree with the table. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmaps m;
	const struct procmap *p;
	size_t i;

	if (procmaps_parse((const char *)data, size, &m)) {
		CHECK(!m.maps && !m.n);
		return 0;
	}
	for (i = 0; i < m.n; i++) {
		const struct procmap *x = &m.maps[i];

		CHECK(x->start < x->end);
		CHECK(!i || m.maps[i - 1].start <= x->start);
		CHECK(strlen(x->path) <= size);
		CHECK(!(x->prot & ~(uint32_t)(PROT_READ | PROT_WRITE | PROT_EXEC)));
		p = procmaps_find(&m, x->start);
		CHECK(p && p->start <= x->start && x->start < p->end);
		p = procmaps_find(&m, x->end - 1);
		CHECK(!p || (p->start <= x->end - 1 && x->end - 1 < p->end));
	}
	p = procmaps_find(&m, fuzz_u64(data, size, 0, 8));
	procmaps_free(&m);
	return 0;
}
