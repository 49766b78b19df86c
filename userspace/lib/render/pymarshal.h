/* pymarshal: write values in CPython's marshal format (version 4, read
 * by every CPython since 3.4, so all of 3.9-3.13), enough for pstats
 * files: dict, tuple, int, float, str.  No references (FLAG_REF) are
 * written; every object is spelled out.
 *
 * Type codes used: '{' dict (key, value pairs, then '0'), ')' small tuple
 * (count in one byte) or '(' tuple (int32 count), 'i' int32, 'l' long
 * (int32 digit count, sign in it, then 15-bit digits low first), 'g'
 * binary double, 'z' short ASCII string (one-byte length), 'u' UTF-8
 * string (int32 length).  Integers are little endian.  Errors stick in
 * the buf. */
#ifndef PROFD_PYMARSHAL_H
#define PROFD_PYMARSHAL_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

void pymarshal_dict_begin(struct buf *b);
void pymarshal_dict_end(struct buf *b);
/* A tuple header; the n items follow. */
void pymarshal_tuple(struct buf *b, uint32_t n);
void pymarshal_int(struct buf *b, int64_t v);
void pymarshal_uint(struct buf *b, uint64_t v);
void pymarshal_float(struct buf *b, double v);
/* s[0..len) as a str; invalid UTF-8 bytes become U+FFFD (marshal
 * refuses strings that are not UTF-8). */
void pymarshal_str(struct buf *b, const char *s, size_t len);

#endif
