/* buf: a growable byte buffer used by the renderers and the protocol.
 * Allocation failure never aborts: the buffer remembers it (buf.failed)
 * and every later append is a no-op, so callers check once at the end. */
#ifndef PROFD_BUF_H
#define PROFD_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf {
	char *data;
	size_t len;
	size_t cap;
	bool failed;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
bool buf_reserve(struct buf *b, size_t extra);
void buf_append(struct buf *b, const void *data, size_t len);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_put_u8(struct buf *b, uint8_t v);
void buf_put_u16(struct buf *b, uint16_t v); /* little endian */
void buf_put_u32(struct buf *b, uint32_t v);
void buf_put_u64(struct buf *b, uint64_t v);
/* Append s with XML special characters escaped (for SVG and HTML). */
void buf_put_xml(struct buf *b, const char *s);
/* Append s as a JSON string literal, quotes included. */
void buf_put_json_str(struct buf *b, const char *s);
/* NUL-terminate without counting the NUL in len; returns data or NULL. */
const char *buf_cstr(struct buf *b);
/* Write the whole buffer to fd; 0 or -errno. */
int buf_write_fd(const struct buf *b, int fd);

/* cursor: bounds-checked reader over untrusted bytes.  Any read past the
 * end sets .bad and returns zeros; parsers check .bad once at the end. */
struct cursor {
	const uint8_t *p;
	size_t left;
	bool bad;
};

void cursor_init(struct cursor *c, const void *data, size_t len);
uint8_t cursor_u8(struct cursor *c);
uint16_t cursor_u16(struct cursor *c);
uint32_t cursor_u32(struct cursor *c);
uint64_t cursor_u64(struct cursor *c);
/* Returns a pointer into the data (not copied) or NULL if too short. */
const void *cursor_bytes(struct cursor *c, size_t len);

#endif
