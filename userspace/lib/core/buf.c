#include "buf.h"
#include "utf8.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void buf_init(struct buf *b)
{
	memset(b, 0, sizeof(*b));
}

void buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	b->failed = false;
}

bool buf_reserve(struct buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (b->failed)
		return false;
	if (extra > SIZE_MAX - b->len - 1)
		goto fail;
	need = b->len + extra + 1; /* room for a terminating NUL */
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (!p)
		goto fail;
	b->data = p;
	b->cap = cap;
	return true;
fail:
	b->failed = true;
	return false;
}

void buf_append(struct buf *b, const void *data, size_t len)
{
	if (!len || !buf_reserve(b, len))
		return;
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

void buf_puts(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->failed)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !buf_reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void buf_put_u8(struct buf *b, uint8_t v)
{
	buf_append(b, &v, 1);
}

void buf_put_u16(struct buf *b, uint16_t v)
{
	uint8_t x[2] = { v, v >> 8 };

	buf_append(b, x, sizeof(x));
}

void buf_put_u32(struct buf *b, uint32_t v)
{
	uint8_t x[4] = { v, v >> 8, v >> 16, v >> 24 };

	buf_append(b, x, sizeof(x));
}

void buf_put_u64(struct buf *b, uint64_t v)
{
	buf_put_u32(b, (uint32_t)v);
	buf_put_u32(b, (uint32_t)(v >> 32));
}

void buf_put_xml(struct buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': buf_puts(b, "&lt;"); break;
		case '>': buf_puts(b, "&gt;"); break;
		case '&': buf_puts(b, "&amp;"); break;
		case '"': buf_puts(b, "&quot;"); break;
		case '\'': buf_puts(b, "&apos;"); break;
		default:
			/* Control characters are not allowed in XML 1.0. */
			if ((unsigned char)*s < 0x20 && *s != '\t')
				buf_put_u8(b, '?');
			else
				buf_put_u8(b, (uint8_t)*s);
		}
	}
}

/* Process and symbol names are whatever bytes their owners chose: invalid
 * UTF-8 is replaced (utf8.c) so the JSON stays valid. */
void buf_put_json_str(struct buf *b, const char *s)
{
	utf8_put_json(b, s);
}

const char *buf_cstr(struct buf *b)
{
	if (!buf_reserve(b, 0))
		return NULL;
	b->data[b->len] = '\0';
	return b->data;
}

int buf_write_fd(const struct buf *b, int fd)
{
	size_t off = 0;

	while (off < b->len) {
		ssize_t n = write(fd, b->data + off, b->len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	return 0;
}

void cursor_init(struct cursor *c, const void *data, size_t len)
{
	c->p = data;
	c->left = len;
	c->bad = false;
}

const void *cursor_bytes(struct cursor *c, size_t len)
{
	const void *p;

	if (c->bad || len > c->left) {
		c->bad = true;
		return NULL;
	}
	p = c->p;
	c->p += len;
	c->left -= len;
	return p;
}

uint8_t cursor_u8(struct cursor *c)
{
	const uint8_t *p = cursor_bytes(c, 1);

	return p ? p[0] : 0;
}

uint16_t cursor_u16(struct cursor *c)
{
	const uint8_t *p = cursor_bytes(c, 2);

	return p ? (uint16_t)(p[0] | p[1] << 8) : 0;
}

uint32_t cursor_u32(struct cursor *c)
{
	const uint8_t *p = cursor_bytes(c, 4);

	return p ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			   (uint32_t)p[3] << 24
		 : 0;
}

uint64_t cursor_u64(struct cursor *c)
{
	uint64_t lo = cursor_u32(c);

	return lo | (uint64_t)cursor_u32(c) << 32;
}
