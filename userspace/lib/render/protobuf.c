#include "protobuf.h"

#include <string.h>

size_t pb_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void pb_put_varint(struct buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	buf_append(b, tmp, n);
}

void pb_put_key(struct buf *b, uint32_t field, enum pb_wire wire)
{
	pb_put_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

void pb_put_uint64(struct buf *b, uint32_t field, uint64_t v)
{
	pb_put_key(b, field, PB_WIRE_VARINT);
	pb_put_varint(b, v);
}

void pb_put_int64(struct buf *b, uint32_t field, int64_t v)
{
	pb_put_uint64(b, field, (uint64_t)v);
}

void pb_put_bool(struct buf *b, uint32_t field, int v)
{
	pb_put_uint64(b, field, v ? 1 : 0);
}

void pb_put_fixed64(struct buf *b, uint32_t field, uint64_t v)
{
	pb_put_key(b, field, PB_WIRE_I64);
	buf_put_u64(b, v);
}

void pb_put_bytes(struct buf *b, uint32_t field, const void *data, size_t len)
{
	pb_put_key(b, field, PB_WIRE_LEN);
	pb_put_varint(b, len);
	buf_append(b, data, len);
}

void pb_put_string(struct buf *b, uint32_t field, const char *s)
{
	pb_put_bytes(b, field, s, strlen(s));
}

void pb_put_packed_uint64(struct buf *b, uint32_t field, const uint64_t *v, size_t n)
{
	size_t i, len = 0;

	if (!n)
		return;
	/* Sizes first: the payload length precedes the payload. */
	for (i = 0; i < n; i++)
		len += pb_varint_size(v[i]);
	pb_put_key(b, field, PB_WIRE_LEN);
	pb_put_varint(b, len);
	if (!buf_reserve(b, len))
		return;
	for (i = 0; i < n; i++)
		pb_put_varint(b, v[i]);
}

void pb_put_packed_int64(struct buf *b, uint32_t field, const int64_t *v, size_t n)
{
	size_t i, len = 0;

	if (!n)
		return;
	for (i = 0; i < n; i++)
		len += pb_varint_size((uint64_t)v[i]);
	pb_put_key(b, field, PB_WIRE_LEN);
	pb_put_varint(b, len);
	if (!buf_reserve(b, len))
		return;
	for (i = 0; i < n; i++)
		pb_put_varint(b, (uint64_t)v[i]);
}
