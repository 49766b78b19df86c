/* pylinetable: decode CPython's bytecode-offset -> line tables into one
 * searchable form.  Three encodings exist:
 *   3.9   co_lnotab     (addr_incr u8, line_incr s8) pairs
 *   3.10  co_linetable  PEP 626 (length u8, line delta s8; -128 = none)
 *   3.11+ co_linetable  location table (variable-length entries in code
 *                       units, with columns we skip)
 * The tables come from another process and are untrusted: decoding is
 * bounded by the input length and rejects malformed entries. */
#ifndef PROFD_PYLINETABLE_H
#define PROFD_PYLINETABLE_H

#include <stddef.h>
#include <stdint.h>

#include "pyoffsets.h"

/* Larger tables are refused (a real one is a few bytes per line). */
#define PYLINES_MAX_TABLE (1u << 20)

/* Ranges [starts[i], starts[i+1]) (the last one up to end) map to
 * lines[i]; -1 means "no line" (3.10+ artificial instructions). */
struct pylines {
	uint32_t *starts; /* byte offsets, strictly increasing */
	int32_t *lines;
	uint32_t n;
	uint32_t end; /* UINT32_MAX when the table does not bound the code */
	int32_t firstlineno;
};

/* 0, -EINVAL (malformed or format unknown), -E2BIG, -ENOMEM.  On error
 * out is empty (safe to free). */
int pylines_decode(uint32_t format, const uint8_t *tab, size_t len, int32_t firstlineno,
		   struct pylines *out);
/* Line of the instruction at byte offset off; co_firstlineno for a
 * negative offset (a frame that has not started yet), -1 if none. */
int32_t pylines_line(const struct pylines *l, int64_t off);
/* Bytes of memory the decoded table holds (for cache accounting). */
size_t pylines_bytes(const struct pylines *l);
void pylines_free(struct pylines *l);

#endif
