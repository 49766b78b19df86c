#include "protocol_tlv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

static void put_attr_hdr(struct buf *b, uint16_t tag, uint32_t len)
{
	buf_put_u16(b, tag);
	buf_put_u16(b, 0);
	buf_put_u32(b, len);
}

void proto_tlv_put_u32(struct buf *b, uint16_t tag, uint32_t v)
{
	put_attr_hdr(b, tag, 4);
	buf_put_u32(b, v);
}

void proto_tlv_put_u64(struct buf *b, uint16_t tag, uint64_t v)
{
	put_attr_hdr(b, tag, 8);
	buf_put_u64(b, v);
}

int proto_tlv_put_str(struct buf *b, uint16_t tag, const char *s)
{
	size_t len;

	if (!s)
		return 0;
	len = strlen(s);
	/* Refuse here rather than send what every decoder would reject. */
	if (len > PROTO_MAX_STRING)
		return -EMSGSIZE;
	put_attr_hdr(b, tag, (uint32_t)len);
	buf_append(b, s, len);
	return 0;
}

void proto_tlv_put_u32_array(struct buf *b, uint16_t tag, const uint32_t *v, uint32_t n)
{
	uint32_t i;

	put_attr_hdr(b, tag, n * 4);
	if (!buf_reserve(b, (size_t)n * 4))
		return;
	for (i = 0; i < n; i++)
		buf_put_u32(b, v[i]);
}

void proto_tlv_put_u64_array(struct buf *b, uint16_t tag, const uint64_t *v, uint32_t n)
{
	uint32_t i;

	put_attr_hdr(b, tag, n * 8);
	if (!buf_reserve(b, (size_t)n * 8))
		return;
	for (i = 0; i < n; i++)
		buf_put_u64(b, v[i]);
}

size_t proto_tlv_nest_start(struct buf *b, uint16_t tag)
{
	size_t start = b->len;

	put_attr_hdr(b, tag, 0); /* length patched by nest_end */
	return start;
}

int proto_tlv_nest_end(struct buf *b, size_t start)
{
	size_t len;
	uint8_t *p;

	if (b->failed)
		return 0; /* reported by proto_tlv_finish */
	len = b->len - start - PROTO_TLV_HDR_SIZE;
	if (len > UINT32_MAX)
		return -EMSGSIZE;
	p = (uint8_t *)b->data + start + 4;
	p[0] = (uint8_t)len;
	p[1] = (uint8_t)(len >> 8);
	p[2] = (uint8_t)(len >> 16);
	p[3] = (uint8_t)(len >> 24);
	return 0;
}

int proto_tlv_finish(struct buf *b, size_t start, int err)
{
	if (!err && b->failed)
		err = -ENOMEM;
	if (err && b->len > start)
		b->len = start;
	return err;
}

int proto_tlv_next(struct cursor *c, struct proto_attr *a)
{
	uint16_t reserved;

	if (!c->bad && c->left == 0)
		return 0;
	a->tag = cursor_u16(c);
	reserved = cursor_u16(c);
	a->len = cursor_u32(c);
	a->val = cursor_bytes(c, a->len);
	if (c->bad || reserved)
		return -EPROTO;
	return 1;
}

int proto_tlv_count(const void *data, size_t len, uint16_t tag, size_t *n)
{
	struct proto_attr a;
	struct cursor c;
	int ret;

	*n = 0;
	cursor_init(&c, data, len);
	while ((ret = proto_tlv_next(&c, &a)) > 0)
		if (a.tag == tag)
			(*n)++;
	return ret;
}

int proto_tlv_walk(const void *data, size_t len, proto_tlv_fn fn, void *ctx)
{
	struct proto_attr a;
	struct cursor c;
	int ret;

	cursor_init(&c, data, len);
	while ((ret = proto_tlv_next(&c, &a)) > 0) {
		ret = fn(&a, ctx);
		if (ret)
			return ret;
	}
	return ret;
}

/* Scalars and strings are single-valued: a repeat is malformed rather
 * than "last one wins", so two decoders can never disagree. */
int proto_tlv_once(uint64_t *seen, uint16_t tag)
{
	if (tag >= 64)
		return 0;
	if (*seen & PROTO_TLV_BIT(tag))
		return -EPROTO;
	*seen |= PROTO_TLV_BIT(tag);
	return 0;
}

int proto_tlv_get_u32(const struct proto_attr *a, uint64_t *seen, uint32_t *v)
{
	struct cursor c;

	if (a->len != 4 || proto_tlv_once(seen, a->tag))
		return -EPROTO;
	cursor_init(&c, a->val, a->len);
	*v = cursor_u32(&c);
	return 0;
}

int proto_tlv_get_u64(const struct proto_attr *a, uint64_t *seen, uint64_t *v)
{
	struct cursor c;

	if (a->len != 8 || proto_tlv_once(seen, a->tag))
		return -EPROTO;
	cursor_init(&c, a->val, a->len);
	*v = cursor_u64(&c);
	return 0;
}

int proto_tlv_get_str(const struct proto_attr *a, uint64_t *seen, char **out)
{
	char *s;

	if (a->len > PROTO_MAX_STRING)
		return -EMSGSIZE;
	if ((a->len && memchr(a->val, '\0', a->len)) || proto_tlv_once(seen, a->tag))
		return -EPROTO;
	s = malloc((size_t)a->len + 1);
	if (!s)
		return -ENOMEM;
	if (a->len)
		memcpy(s, a->val, a->len);
	s[a->len] = '\0';
	free(*out); /* only ever a default such as "cpu" */
	*out = s;
	return 0;
}

int proto_tlv_require(uint64_t seen, uint64_t mask)
{
	return (seen & mask) == mask ? 0 : -EPROTO;
}
