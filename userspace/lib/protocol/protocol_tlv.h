/* protocol_tlv: the attribute lists under every protocol payload
 * (u16 tag, u16 reserved 0, u32 length, value).  Internal to the
 * protocol_*.c files; see protocol.h for the format. */
#ifndef PROFD_PROTOCOL_TLV_H
#define PROFD_PROTOCOL_TLV_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define PROTO_TLV_HDR_SIZE 8

struct proto_attr {
	uint16_t tag;
	uint32_t len;
	const uint8_t *val; /* points into the message */
};

/* Writers.  Failures to grow the buffer are left in b->failed, which
 * proto_tlv_finish() turns into -ENOMEM. */
void proto_tlv_put_u32(struct buf *b, uint16_t tag, uint32_t v);
void proto_tlv_put_u64(struct buf *b, uint16_t tag, uint64_t v);
/* NULL is omitted; -EMSGSIZE over PROTO_MAX_STRING. */
int proto_tlv_put_str(struct buf *b, uint16_t tag, const char *s);
/* n is at most PROTO_MAX_DEPTH, so n * 4 cannot overflow. */
void proto_tlv_put_u32_array(struct buf *b, uint16_t tag, const uint32_t *v, uint32_t n);
void proto_tlv_put_u64_array(struct buf *b, uint16_t tag, const uint64_t *v, uint32_t n);
/* A nested attribute: start returns its offset, end patches its length. */
size_t proto_tlv_nest_start(struct buf *b, uint16_t tag);
int proto_tlv_nest_end(struct buf *b, size_t start);
/* Common tail of an encoder: on err (or a failed buf) roll b back to
 * start, else return 0. */
int proto_tlv_finish(struct buf *b, size_t start, int err);

/* Readers.  next returns 1 with *a filled, 0 at the end, -EPROTO when
 * the list is malformed (cut attribute, reserved bits set). */
int proto_tlv_next(struct cursor *c, struct proto_attr *a);
/* Walk a whole list (checking its framing) and count the tag, so a
 * decoder can size an array by what the bytes really hold. */
int proto_tlv_count(const void *data, size_t len, uint16_t tag, size_t *n);
/* Call fn for each attribute; stops at the first nonzero return. */
typedef int (*proto_tlv_fn)(const struct proto_attr *a, void *ctx);
int proto_tlv_walk(const void *data, size_t len, proto_tlv_fn fn, void *ctx);
/* Scalars may appear once: *seen tracks which tags (< 64) were read;
 * once marks tag and returns -EPROTO if it was already there. */
int proto_tlv_once(uint64_t *seen, uint16_t tag);
int proto_tlv_get_u32(const struct proto_attr *a, uint64_t *seen, uint32_t *v);
int proto_tlv_get_u64(const struct proto_attr *a, uint64_t *seen, uint64_t *v);
/* Copy a string out: -EPROTO on NUL or repeat, -EMSGSIZE too long. */
int proto_tlv_get_str(const struct proto_attr *a, uint64_t *seen, char **out);
/* 0 when every tag in mask was seen, else -EPROTO (field missing). */
int proto_tlv_require(uint64_t seen, uint64_t mask);

#define PROTO_TLV_BIT(tag) (1ull << (tag))

#endif
