/* libFuzzer target: CPython line-table decoding (all three encodings).
 * Input: one byte selecting the format, four bytes of co_firstlineno
 * (little-endian), then the table.  A decoded table must be strictly
 * increasing, bounded by the input, and every lookup must answer a line
 * the table holds. */
#include <errno.h>
#include <stdint.h>

#include "fuzz.h"
#include "pylinetable.h"

static void check(const struct pylines *l, size_t len, int32_t first)
{
	uint32_t i;

	CHECK(l->n <= len + 1);
	for (i = 0; i < l->n; i++) {
		CHECK(!i || l->starts[i - 1] < l->starts[i]);
		CHECK(l->lines[i] >= -1);
		CHECK(pylines_line(l, l->starts[i]) == (l->starts[i] < l->end ? l->lines[i] : -1));
	}
	CHECK(pylines_line(l, -1) == first);
	pylines_line(l, 0);
	pylines_line(l, INT64_MAX);
	if (l->n)
		pylines_line(l, (int64_t)l->starts[l->n - 1] + 1);
	CHECK(pylines_bytes(l) == (size_t)l->n * 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pylines l;
	uint32_t format;
	int32_t first;
	int err;

	if (size < 5)
		return 0;
	format = data[0] % 4; /* 0 is no format: must be refused */
	first = (int32_t)(uint32_t)fuzz_u64(data, size, 1, 4);
	err = pylines_decode(format, data + 5, size - 5, first, &l);
	if (err) {
		CHECK(err == -EINVAL || err == -E2BIG || err == -ENOMEM);
		CHECK(!l.n && !l.starts && !l.lines);
	} else {
		CHECK(format);
		check(&l, size - 5, first);
	}
	pylines_free(&l);
	return 0;
}
