#include "utf8.h"

#include <stdint.h>
#include <string.h>

#define UTF8_REPLACEMENT "\xef\xbf\xbd"

/* Bounded by len so callers can scan a slice of a longer name.  The
 * noncharacters U+FFFE and U+FFFF are refused too: XML may not carry
 * them, and no symbol name needs them. */
static size_t seq_len_n(const unsigned char *s, size_t len)
{
	uint32_t cp;
	size_t n, i;

	if (!len || !s[0])
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n > len)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
		return 0;
	return n;
}

size_t utf8_seq_len(const char *s)
{
	return seq_len_n((const unsigned char *)s, strnlen(s, 4));
}

void utf8_put_clean(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	size_t n;

	while (p < end) {
		n = seq_len_n(p, (size_t)(end - p));
		if (n) {
			buf_append(b, p, n);
			p += n;
		} else {
			buf_puts(b, UTF8_REPLACEMENT);
			p++;
		}
	}
}

size_t utf8_clean_len(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	size_t n, total = 0;

	while (p < end) {
		n = seq_len_n(p, (size_t)(end - p));
		total += n ? n : sizeof(UTF8_REPLACEMENT) - 1;
		p += n ? n : 1;
	}
	return total;
}

void utf8_put_json_n(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	size_t n;

	buf_put_u8(b, '"');
	while (p < end) {
		if (*p == '"' || *p == '\\') {
			buf_put_u8(b, '\\');
			buf_put_u8(b, *p++);
			continue;
		}
		if (*p < 0x20) {
			buf_printf(b, "\\u%04x", *p++);
			continue;
		}
		n = seq_len_n(p, (size_t)(end - p));
		if (n) {
			buf_append(b, p, n);
			p += n;
		} else {
			buf_puts(b, UTF8_REPLACEMENT);
			p++;
		}
	}
	buf_put_u8(b, '"');
}

void utf8_put_json(struct buf *b, const char *s)
{
	utf8_put_json_n(b, s, strlen(s));
}

void utf8_put_xml_cut(struct buf *out, struct buf *scratch, const char *s, size_t max)
{
	size_t chars = 0, n = 0, cut = 0, cut_chars = max > 2 ? max - 2 : 0;

	buf_reset(scratch);
	for (; *s; s += n ? n : 1, chars++) {
		if (chars == cut_chars)
			cut = scratch->len;
		if (chars == max) {
			scratch->len = cut;
			buf_puts(scratch, "..");
			break;
		}
		n = utf8_seq_len(s);
		if (n)
			buf_append(scratch, s, n);
		else
			buf_put_u8(scratch, '?');
	}
	if (buf_cstr(scratch))
		buf_put_xml(out, scratch->data);
}
