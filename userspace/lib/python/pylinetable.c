#include "pylinetable.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Appending builder: merges a range into the previous one when the line
 * is the same, and replaces it when both start at the same offset. */
struct builder {
	struct pylines *l;
	uint32_t cap;
};

static void add_range(struct builder *b, uint64_t start, int64_t line)
{
	struct pylines *l = b->l;

	if (line < -1 || line > INT32_MAX)
		line = -1;
	if (l->n && l->starts[l->n - 1] == start) {
		l->lines[l->n - 1] = (int32_t)line;
		if (l->n > 1 && l->lines[l->n - 2] == line)
			l->n--;
		return;
	}
	if (l->n && l->lines[l->n - 1] == line)
		return;
	if (l->n < b->cap) {
		l->starts[l->n] = (uint32_t)start;
		l->lines[l->n] = (int32_t)line;
		l->n++;
	}
}

/* 3.9: after each pair, the line applies from the cumulative address on
 * (addr_incr 255 / line_incr 0 pairs extend big gaps). */
static int decode_lnotab(struct builder *b, const uint8_t *tab, size_t len)
{
	uint64_t addr = 0;
	int64_t line = b->l->firstlineno;
	size_t i;

	add_range(b, 0, line);
	for (i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		line += (int8_t)tab[i + 1];
		if (addr > UINT32_MAX - 1)
			return -EINVAL;
		add_range(b, addr, line);
	}
	b->l->end = UINT32_MAX;
	return 0;
}

/* 3.10: (length in bytes, line delta) pairs; -128 = no line for this
 * range without moving the running line.  Empty ranges only move it. */
static int decode_pep626(struct builder *b, const uint8_t *tab, size_t len)
{
	uint64_t start = 0;
	int64_t line = b->l->firstlineno;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		int8_t delta = (int8_t)tab[i + 1];
		bool none = delta == -128;

		if (!none)
			line += delta;
		if (!tab[i])
			continue;
		add_range(b, start, none ? -1 : line);
		start += tab[i];
		if (start > UINT32_MAX - 1)
			return -EINVAL;
	}
	b->l->end = (uint32_t)start;
	return 0;
}

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint8_t next_byte(struct reader *r)
{
	if (r->p >= r->end) {
		r->bad = true;
		return 0;
	}
	return *r->p++;
}

/* 6-bit chunks, least significant first, 0x40 = more follows. */
static uint32_t read_varint(struct reader *r)
{
	uint8_t c = next_byte(r);
	uint32_t v = c & 63;
	unsigned int shift = 6;

	while ((c & 64) && !r->bad) {
		if (shift > 30) {
			r->bad = true;
			return 0;
		}
		c = next_byte(r);
		v |= (uint32_t)(c & 63) << shift;
		shift += 6;
	}
	return v;
}

static int32_t read_svarint(struct reader *r)
{
	uint32_t u = read_varint(r);

	return (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
}

/* One location entry: returns its line delta, sets *none for "no
 * location"; columns are skipped. */
static int32_t read_location(struct reader *r, unsigned int code, bool *none)
{
	*none = false;
	switch (code) {
	case 15:
		*none = true;
		return 0;
	case 14: {
		int32_t delta = read_svarint(r);

		read_varint(r); /* end line delta */
		read_varint(r); /* start column */
		read_varint(r); /* end column */
		return delta;
	}
	case 13:
		return read_svarint(r);
	case 10:
	case 11:
	case 12:
		next_byte(r);
		next_byte(r);
		return (int32_t)code - 10;
	default: /* 0..9: short form, same line, one column byte */
		next_byte(r);
		return 0;
	}
}

/* 3.11+: each entry starts with a byte 1cccclll: code c, (l+1) units. */
static int decode_locations(struct builder *b, const uint8_t *tab, size_t len)
{
	struct reader r = {.p = tab, .end = tab + len};
	uint64_t start = 0;
	int64_t line = b->l->firstlineno;

	while (r.p < r.end) {
		uint8_t head = next_byte(&r);
		bool none;
		int32_t delta;

		if (!(head & 0x80))
			return -EINVAL;
		delta = read_location(&r, (head >> 3) & 15, &none);
		if (r.bad)
			return -EINVAL;
		line += delta;
		add_range(b, start, none ? -1 : line);
		start += ((uint64_t)(head & 7) + 1) * 2;
		if (start > UINT32_MAX - 1)
			return -EINVAL;
	}
	b->l->end = (uint32_t)start;
	return 0;
}

int pylines_decode(uint32_t format, const uint8_t *tab, size_t len, int32_t firstlineno,
		   struct pylines *out)
{
	struct builder b = {.l = out, .cap = (uint32_t)len + 1};
	int err;

	memset(out, 0, sizeof(*out));
	out->firstlineno = firstlineno;
	if (len > PYLINES_MAX_TABLE)
		return -E2BIG;
	out->starts = malloc(b.cap * sizeof(*out->starts));
	out->lines = malloc(b.cap * sizeof(*out->lines));
	if (!out->starts || !out->lines) {
		pylines_free(out);
		return -ENOMEM;
	}
	switch (format) {
	case PYOFF_LINES_LNOTAB:
		err = decode_lnotab(&b, tab, len);
		break;
	case PYOFF_LINES_PEP626:
		err = decode_pep626(&b, tab, len);
		break;
	case PYOFF_LINES_LOCATIONS:
		err = decode_locations(&b, tab, len);
		break;
	default:
		err = -EINVAL;
	}
	if (err) {
		pylines_free(out);
		out->firstlineno = firstlineno;
	}
	return err;
}

int32_t pylines_line(const struct pylines *l, int64_t off)
{
	uint32_t lo = 0, hi = l->n;

	if (off < 0)
		return l->firstlineno;
	if (!l->n || off >= l->end || off < l->starts[0])
		return -1;
	/* Last range starting at or before off. */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (l->starts[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return l->lines[lo];
}

size_t pylines_bytes(const struct pylines *l)
{
	return (size_t)l->n * (sizeof(*l->starts) + sizeof(*l->lines));
}

void pylines_free(struct pylines *l)
{
	free(l->starts);
	free(l->lines);
	memset(l, 0, sizeof(*l));
}
