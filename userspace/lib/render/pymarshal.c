#include "pymarshal.h"

#include <string.h>

#include "utf8.h"

enum {
	TYPE_NULL = '0',
	TYPE_DICT = '{',
	TYPE_TUPLE = '(',
	TYPE_SMALL_TUPLE = ')',
	TYPE_INT = 'i',
	TYPE_LONG = 'l',
	TYPE_BINARY_FLOAT = 'g',
	TYPE_SHORT_ASCII = 'z',
	TYPE_UNICODE = 'u',
};

void pymarshal_dict_begin(struct buf *b)
{
	buf_put_u8(b, TYPE_DICT);
}

void pymarshal_dict_end(struct buf *b)
{
	buf_put_u8(b, TYPE_NULL);
}

void pymarshal_tuple(struct buf *b, uint32_t n)
{
	if (n < 256) {
		buf_put_u8(b, TYPE_SMALL_TUPLE);
		buf_put_u8(b, (uint8_t)n);
	} else {
		buf_put_u8(b, TYPE_TUPLE);
		buf_put_u32(b, n);
	}
}

/* Python's long: magnitude in 15-bit digits, least significant first,
 * the digit count negated for negative numbers. */
static void put_long(struct buf *b, uint64_t mag, int negative)
{
	uint16_t digits[5]; /* 64 bits need at most 5 digits of 15 */
	int32_t n = 0, i;

	while (mag) {
		digits[n++] = (uint16_t)(mag & 0x7fff);
		mag >>= 15;
	}
	buf_put_u8(b, TYPE_LONG);
	buf_put_u32(b, (uint32_t)(negative ? -n : n));
	for (i = 0; i < n; i++)
		buf_put_u16(b, digits[i]);
}

void pymarshal_int(struct buf *b, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX) {
		buf_put_u8(b, TYPE_INT);
		buf_put_u32(b, (uint32_t)(int32_t)v);
	} else if (v < 0) {
		put_long(b, (uint64_t)0 - (uint64_t)v, 1);
	} else {
		put_long(b, (uint64_t)v, 0);
	}
}

void pymarshal_uint(struct buf *b, uint64_t v)
{
	if (v <= INT32_MAX)
		pymarshal_int(b, (int64_t)v);
	else
		put_long(b, v, 0);
}

void pymarshal_float(struct buf *b, double v)
{
	uint64_t bits;

	/* IEEE 754 binary64, little endian, as marshal's 'g' expects. */
	memcpy(&bits, &v, sizeof(bits));
	buf_put_u8(b, TYPE_BINARY_FLOAT);
	buf_put_u64(b, bits);
}

static int is_ascii(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80)
			return 0;
	return 1;
}

void pymarshal_str(struct buf *b, const char *s, size_t len)
{
	size_t clean;

	if (len < 256 && is_ascii(s, len)) {
		buf_put_u8(b, TYPE_SHORT_ASCII);
		buf_put_u8(b, (uint8_t)len);
		buf_append(b, s, len);
		return;
	}
	clean = utf8_clean_len(s, len);
	if (clean > INT32_MAX) {
		b->failed = true;
		return;
	}
	buf_put_u8(b, TYPE_UNICODE);
	buf_put_u32(b, (uint32_t)clean);
	utf8_put_clean(b, s, len);
}
