/* protobuf: the few pieces of the protocol-buffers wire format that the
 * pprof and OTLP writers need: varints, fixed64, length-delimited fields
 * (strings, bytes, nested messages) and packed repeated varints.  Encode
 * only.
 *
 * A nested message is encoded into its own buf and then appended with
 * pb_put_bytes(), because its length comes before it on the wire.
 * Errors stick in the buf (buf.failed), as everywhere else. */
#ifndef PROFD_PROTOBUF_H
#define PROFD_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum pb_wire {
	PB_WIRE_VARINT = 0,
	PB_WIRE_I64 = 1,
	PB_WIRE_LEN = 2,
	PB_WIRE_I32 = 5,
};

/* Bytes the varint encoding of v takes (1..10). */
size_t pb_varint_size(uint64_t v);
/* Append v as a base-128 varint, low groups first. */
void pb_put_varint(struct buf *b, uint64_t v);
/* Append a field key: field number and wire type. */
void pb_put_key(struct buf *b, uint32_t field, enum pb_wire wire);

/* Varint fields.  int64 fields carry negative values as their 64-bit
 * two's complement (ten bytes), as protobuf's int64 does; no zigzag. */
void pb_put_uint64(struct buf *b, uint32_t field, uint64_t v);
void pb_put_int64(struct buf *b, uint32_t field, int64_t v);
void pb_put_bool(struct buf *b, uint32_t field, int v);
/* fixed64: eight bytes, little endian (OTLP's timestamps). */
void pb_put_fixed64(struct buf *b, uint32_t field, uint64_t v);

/* Length-delimited: bytes, a string, or an already encoded message. */
void pb_put_bytes(struct buf *b, uint32_t field, const void *data, size_t len);
void pb_put_string(struct buf *b, uint32_t field, const char *s);

/* Packed repeated varints (proto3's default for repeated scalars).
 * Nothing is written for n == 0: an absent field is an empty list. */
void pb_put_packed_uint64(struct buf *b, uint32_t field, const uint64_t *v, size_t n);
void pb_put_packed_int64(struct buf *b, uint32_t field, const int64_t *v, size_t n);

#endif
