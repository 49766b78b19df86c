/* libFuzzer target: every protocol parser gets the same bytes.  Whatever
 * decodes must also re-encode, and the re-encoding must be a fixed point
 * (decode -> encode -> decode -> encode gives the same bytes), so the
 * encoders and decoders cannot drift apart. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "log.h"
#include "protocol.h"
#include "tlset.h"

#define CHECK(cond)                        \
	do {                               \
		if (!(cond))               \
			__builtin_trap();  \
	} while (0)

/* One decoder/encoder pair behind a common shape. */
struct codec {
	int (*decode)(const void *data, size_t len, void **obj);
	int (*encode)(struct buf *b, const void *obj);
	void (*free)(void *obj);
};

#define SIMPLE_CODEC(name, type)                                                     \
	static int name##_dec(const void *d, size_t n, void **obj)                   \
	{                                                                            \
		static type v;                                                       \
		int ret = proto_decode_##name(d, n, &v);                             \
		*obj = &v;                                                           \
		return ret;                                                          \
	}                                                                            \
	static void name##_free(void *obj)                                           \
	{                                                                            \
		proto_##name##_free(obj);                                            \
	}

SIMPLE_CODEC(dump_req, struct proto_dump_req)
SIMPLE_CODEC(list, struct proto_list)
SIMPLE_CODEC(stats, struct proto_stats)
SIMPLE_CODEC(error, struct proto_error)

static int dump_req_enc(struct buf *b, const void *obj)
{
	return proto_encode_dump_req(b, obj);
}

static int list_enc(struct buf *b, const void *obj)
{
	return proto_encode_list(b, obj);
}

static int stats_enc(struct buf *b, const void *obj)
{
	return proto_encode_stats(b, obj);
}

static int error_enc(struct buf *b, const void *obj)
{
	const struct proto_error *e = obj;

	return proto_encode_error(b, e->code, e->message);
}

static int stackset_dec(const void *d, size_t n, void **obj)
{
	int err;

	*obj = proto_decode_stackset(d, n, &err);
	CHECK(!err == !!*obj);
	return err;
}

static int stackset_enc(struct buf *b, const void *obj)
{
	return proto_encode_stackset(b, obj);
}

static void stackset_free_obj(void *obj)
{
	stackset_free(obj);
}

static int timeline_dec(const void *d, size_t n, void **obj)
{
	int err;

	*obj = proto_decode_timeline(d, n, &err);
	CHECK(!err == !!*obj);
	return err;
}

static int timeline_enc(struct buf *b, const void *obj)
{
	return proto_encode_timeline(b, obj);
}

static void timeline_free_obj(void *obj)
{
	tlset_free(obj);
}

static const struct codec codecs[] = {
	{ dump_req_dec, dump_req_enc, dump_req_free },
	{ list_dec, list_enc, list_free },
	{ stats_dec, stats_enc, stats_free },
	{ error_dec, error_enc, error_free },
	{ stackset_dec, stackset_enc, stackset_free_obj },
	{ timeline_dec, timeline_enc, timeline_free_obj },
};

static void check_codec(const struct codec *c, const uint8_t *data, size_t size)
{
	struct buf b1, b2;
	void *obj;
	int ret;

	ret = c->decode(data, size, &obj);
	CHECK(ret <= 0);
	if (ret) {
		c->free(obj);
		return;
	}
	buf_init(&b1);
	buf_init(&b2);
	CHECK(c->encode(&b1, obj) == 0);
	c->free(obj);
	CHECK(c->decode(b1.data, b1.len, &obj) == 0);
	CHECK(c->encode(&b2, obj) == 0);
	c->free(obj);
	CHECK(b1.len == b2.len && (!b1.len || !memcmp(b1.data, b2.data, b1.len)));
	buf_free(&b1);
	buf_free(&b2);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR); /* version mismatches warn */
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const void *payload;
	struct proto_hdr h;
	size_t i;

	proto_parse_header(data, size, PROTO_MAX_RESPONSE, &h);
	if (!proto_parse_message(data, size, PROTO_MAX_RESPONSE, &h, &payload))
		CHECK(h.length == size - PROTO_HDR_SIZE);
	for (i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
		check_codec(&codecs[i], data, size);
	return 0;
}
