/* Protocol payloads from a hostile peer: crafted, truncated, mutated and
 * random bytes must fail cleanly (ASan/LSan builds check for leaks). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protocol_fixtures.h"

static void frame_attr(struct buf *b, uint32_t kind, const char *name)
{
	size_t nest = proto_tlv_nest_start(b, PROTO_SS_A_FRAME);

	proto_tlv_put_u32(b, PROTO_FRAME_A_KIND, kind);
	assert_int_equal(proto_tlv_put_str(b, PROTO_FRAME_A_NAME, name), 0);
	assert_int_equal(proto_tlv_nest_end(b, nest), 0);
}

/* A frame in module (wire index + 1); 0 leaves the attribute out. */
static void frame_in(struct buf *b, uint32_t kind, const char *name, uint32_t module)
{
	size_t nest = proto_tlv_nest_start(b, PROTO_SS_A_FRAME);

	proto_tlv_put_u32(b, PROTO_FRAME_A_KIND, kind);
	assert_int_equal(proto_tlv_put_str(b, PROTO_FRAME_A_NAME, name), 0);
	if (module)
		proto_tlv_put_u32(b, PROTO_FRAME_A_MODULE, module);
	assert_int_equal(proto_tlv_nest_end(b, nest), 0);
}

/* path or build_id NULL leaves that attribute out. */
static void module_attr(struct buf *b, const char *path, const char *build_id)
{
	size_t nest = proto_tlv_nest_start(b, PROTO_SS_A_MODULE);

	assert_int_equal(proto_tlv_put_str(b, PROTO_MODULE_A_PATH, path), 0);
	assert_int_equal(proto_tlv_put_str(b, PROTO_MODULE_A_BUILD_ID, build_id), 0);
	assert_int_equal(proto_tlv_nest_end(b, nest), 0);
}

static void stack_attr(struct buf *b, uint64_t count, const uint32_t *ids, uint32_t depth)
{
	size_t nest = proto_tlv_nest_start(b, PROTO_SS_A_STACK);

	proto_tlv_put_u64(b, PROTO_STACK_A_COUNT, count);
	proto_tlv_put_u32_array(b, PROTO_STACK_A_FRAMES, ids, depth);
	assert_int_equal(proto_tlv_nest_end(b, nest), 0);
}

static int decode_ss_err(const struct buf *b)
{
	int err = 0;
	struct stackset *ss = proto_decode_stackset(b->data, b->len, &err);

	stackset_free(ss);
	return err;
}

static void test_stackset_rejects(void **state)
{
	static uint32_t deep[PROTO_MAX_DEPTH + 1];
	uint32_t ids[] = { 0, 1 };
	struct stackset *ss;
	struct buf b;

	(void)state;
	buf_init(&b);
	/* Stacks may precede frames; repeated frames merge. */
	stack_attr(&b, 3, ids, 2);
	frame_attr(&b, FRAME_NATIVE, "main");
	frame_attr(&b, FRAME_NATIVE, "main");
	ss = proto_decode_stackset(b.data, b.len, NULL);
	assert_non_null(ss);
	assert_int_equal(ss->nframes, 1);
	assert_int_equal(ss->stacks[0].frames[1], 0);
	assert_true(ss->total == 3);
	stackset_free(ss);

	stack_attr(&b, 1, (uint32_t[]){ 2 }, 1); /* frame id out of range */
	assert_int_equal(decode_ss_err(&b), -EPROTO);
	assert_int_equal(errno, EPROTO);

	buf_reset(&b);
	frame_attr(&b, FRAME_KIND_MAX, "bad kind");
	assert_int_equal(decode_ss_err(&b), -EPROTO);

	buf_reset(&b);
	frame_attr(&b, FRAME_ROOT, "root");
	stack_attr(&b, 1, deep, PROTO_MAX_DEPTH); /* deepest allowed */
	assert_int_equal(decode_ss_err(&b), 0);
	stack_attr(&b, 1, deep, PROTO_MAX_DEPTH + 1);
	assert_int_equal(decode_ss_err(&b), -EMSGSIZE);

	buf_reset(&b);
	frame_attr(&b, FRAME_ROOT, "root");
	stack_attr(&b, UINT64_MAX, ids, 1);
	assert_int_equal(decode_ss_err(&b), 0);
	stack_attr(&b, 1, ids, 1); /* the total would wrap */
	assert_int_equal(decode_ss_err(&b), -EPROTO);

	buf_reset(&b);
	proto_tlv_put_str(&b, PROTO_SS_A_TITLE, "a");
	proto_tlv_put_str(&b, PROTO_SS_A_TITLE, "b"); /* scalars are single */
	assert_int_equal(decode_ss_err(&b), -EPROTO);

	buf_reset(&b);
	frame_attr(&b, FRAME_ROOT, "root");
	proto_tlv_put_u32(&b, PROTO_SS_A_STACK, 0); /* nested attr cut short */
	assert_int_equal(decode_ss_err(&b), -EPROTO);

	buf_reset(&b);
	proto_tlv_put_u64(&b, PROTO_SS_A_RATE_HZ, 99); /* wrong width */
	assert_int_equal(decode_ss_err(&b), -EPROTO);

	/* Encoder refuses what no decoder would accept. */
	ss = stackset_new();
	assert_non_null(ss);
	assert_true(stackset_intern(ss, FRAME_NATIVE, "f") == 0);
	assert_int_equal(stackset_add(ss, deep, PROTO_MAX_DEPTH + 1, 1), 0);
	buf_reset(&b);
	assert_int_equal(proto_encode_stackset(&b, ss), -EMSGSIZE);
	assert_int_equal(b.len, 0);
	stackset_free(ss);
	buf_free(&b);
}

static void test_stackset_modules(void **state)
{
	char *long_id = repeat_char('a', PROTO_MAX_BUILD_ID + 1);
	uint32_t ids[] = { 0, 1, 2 };
	struct stackset *ss;
	struct buf b;

	(void)state;
	buf_init(&b);
	/* Modules may follow the frames that use them; a repeated module
	 * merges, and so do the frames in it. */
	stack_attr(&b, 5, ids, 3);
	frame_in(&b, FRAME_NATIVE, "main", 1);
	frame_in(&b, FRAME_NATIVE, "main", 2);
	frame_in(&b, FRAME_NATIVE, "main", 0);
	module_attr(&b, "/bin/app", "00ff");
	module_attr(&b, "/bin/app", "00ff");
	ss = proto_decode_stackset(b.data, b.len, NULL);
	assert_non_null(ss);
	assert_int_equal(ss->nmodules, 1);
	assert_int_equal(ss->nframes, 2);
	assert_string_equal(stackset_frame_module(ss, ss->stacks[0].frames[0])->build_id, "00ff");
	assert_int_equal(ss->stacks[0].frames[1], ss->stacks[0].frames[0]);
	assert_null(stackset_frame_module(ss, ss->stacks[0].frames[2]));
	stackset_free(ss);

	/* A module index past the table, even by one. */
	frame_in(&b, FRAME_NATIVE, "f", 3);
	assert_int_equal(decode_ss_err(&b), -EPROTO);
	buf_reset(&b);
	frame_in(&b, FRAME_NATIVE, "f", 1); /* no modules at all */
	assert_int_equal(decode_ss_err(&b), -EPROTO);
	buf_reset(&b);
	frame_in(&b, FRAME_NATIVE, "f", UINT32_MAX);
	module_attr(&b, "/bin/app", NULL);
	assert_int_equal(decode_ss_err(&b), -EPROTO);

	/* Path required; build-ids are lowercase hex of bounded length. */
	buf_reset(&b);
	module_attr(&b, NULL, "00ff");
	assert_int_equal(decode_ss_err(&b), -EPROTO);
	buf_reset(&b);
	module_attr(&b, "/bin/app", "00FF");
	assert_int_equal(decode_ss_err(&b), -EPROTO);
	buf_reset(&b);
	module_attr(&b, "/bin/app", "00 f");
	assert_int_equal(decode_ss_err(&b), -EPROTO);
	buf_reset(&b);
	long_id[PROTO_MAX_BUILD_ID] = '\0';
	module_attr(&b, "/bin/app", long_id); /* longest allowed */
	assert_int_equal(decode_ss_err(&b), 0);
	buf_reset(&b);
	long_id[PROTO_MAX_BUILD_ID] = 'a';
	module_attr(&b, "/bin/app", long_id);
	assert_int_equal(decode_ss_err(&b), -EMSGSIZE);
	buf_reset(&b);
	module_attr(&b, "/bin/app", "00");
	proto_tlv_put_u32(&b, PROTO_SS_A_MODULE, 0); /* nested attr cut short */
	assert_int_equal(decode_ss_err(&b), -EPROTO);

	/* Encoder refuses a frame in a module it does not have, and a
	 * build-id no decoder would take. */
	ss = stackset_new();
	assert_non_null(ss);
	assert_true(stackset_module(ss, "/bin/app", "00ff") == 1);
	assert_true(stackset_intern_in(ss, FRAME_NATIVE, "f", 1) == 0);
	buf_reset(&b);
	assert_int_equal(proto_encode_stackset(&b, ss), 0);
	ss->frames[0].module = 2;
	assert_int_equal(proto_encode_stackset(&b, ss), -EINVAL);
	ss->frames[0].module = 1;
	ss->modules[0].build_id[0] = 'X';
	assert_int_equal(proto_encode_stackset(&b, ss), -EINVAL);
	free(ss->modules[0].build_id);
	ss->modules[0].build_id = long_id;
	assert_int_equal(proto_encode_stackset(&b, ss), -EMSGSIZE);
	ss->modules[0].build_id = NULL; /* read as "" */
	buf_reset(&b);
	assert_int_equal(proto_encode_stackset(&b, ss), 0);
	stackset_free(ss);
	free(long_id);
	buf_free(&b);
}

/* Encode a string holding '#', then turn the '#' into a NUL on the wire. */
static void nul_into(struct buf *b)
{
	char *p = memchr(b->data, '#', b->len);

	assert_non_null(p);
	*p = '\0';
}

static void test_embedded_nul_rejected(void **state)
{
	struct proto_dump_req r = { .comm = "py#thon" };
	struct proto_proc proc = { .pid = 1, .exe = "/bin/#sh" };
	struct proto_list l = { .procs = &proc, .n = 1 };
	struct proto_dump_req out;
	struct stackset *ss;
	struct buf b;

	(void)state;
	buf_init(&b);
	assert_int_equal(proto_encode_dump_req(&b, &r), 0);
	nul_into(&b);
	assert_int_equal(proto_decode_dump_req(b.data, b.len, &out), -EPROTO);
	assert_true(is_zero(&out, sizeof(out)));

	buf_reset(&b);
	assert_int_equal(proto_encode_list(&b, &l), 0);
	nul_into(&b);
	assert_int_equal(decode_with(DEC_LIST, b.data, b.len), -EPROTO);

	buf_reset(&b);
	assert_int_equal(proto_encode_error(&b, EIO, "bad#"), 0);
	nul_into(&b);
	assert_int_equal(decode_with(DEC_ERROR, b.data, b.len), -EPROTO);

	ss = stackset_new();
	assert_non_null(ss);
	assert_int_equal(stackset_add_named(ss, (uint32_t[]){ FRAME_NATIVE },
					    (const char *const[]){ "ma#in" }, 1, 1), 0);
	buf_reset(&b);
	assert_int_equal(proto_encode_stackset(&b, ss), 0);
	nul_into(&b);
	assert_int_equal(decode_ss_err(&b), -EPROTO);
	stackset_free(ss);
	buf_free(&b);
}

static void test_string_limits(void **state)
{
	char *big = repeat_char('s', PROTO_MAX_STRING + 1);
	struct proto_dump_req r = { .comm = big };
	struct proto_stats s = { 0 };
	struct buf b;

	(void)state;
	buf_init(&b);
	buf_puts(&b, "keep");
	assert_int_equal(proto_encode_dump_req(&b, &r), -EMSGSIZE);
	assert_int_equal(b.len, 4); /* rolled back */
	assert_int_equal(proto_encode_error(&b, EIO, big), -EMSGSIZE);
	assert_int_equal(proto_stats_add(&s, big, 1), -EMSGSIZE);

	/* Exactly at the limit is fine; one over, crafted by hand, is not. */
	big[PROTO_MAX_STRING] = '\0';
	buf_reset(&b);
	assert_int_equal(proto_encode_error(&b, EIO, big), 0);
	assert_int_equal(decode_with(DEC_ERROR, b.data, b.len), 0);
	buf_reset(&b);
	proto_tlv_put_u32(&b, PROTO_ERROR_A_CODE, EIO);
	proto_tlv_put_u32(&b, PROTO_ERROR_A_MESSAGE, 0);
	memcpy(b.data + b.len - 8, &(uint32_t){ PROTO_MAX_STRING + 1 }, 4);
	b.len -= 4;
	buf_append(&b, big, PROTO_MAX_STRING);
	buf_put_u8(&b, 's');
	assert_int_equal(decode_with(DEC_ERROR, b.data, b.len), -EMSGSIZE);
	free(big);
	buf_free(&b);
}

static void test_unknown_and_reserved(void **state)
{
	struct proto_list l;
	struct buf b;
	size_t nest;
	int which;

	(void)state;
	buf_init(&b);
	/* Every decoder skips attributes from a newer peer. */
	for (which = 0; which < DEC_MAX; which++) {
		buf_reset(&b);
		proto_tlv_put_u64(&b, 999, 1);
		encode_sample(which, &b);
		proto_tlv_put_u32(&b, 63, 1);
		assert_int_equal(decode_with(which, b.data, b.len), 0);
	}
	/* ...nested ones too. */
	buf_reset(&b);
	nest = proto_tlv_nest_start(&b, PROTO_LIST_A_PROC);
	proto_tlv_put_u32(&b, PROTO_PROC_A_PID, 5);
	proto_tlv_put_u32(&b, 40, 5);
	assert_int_equal(proto_tlv_nest_end(&b, nest), 0);
	assert_int_equal(proto_decode_list(b.data, b.len, &l), 0);
	assert_int_equal(l.procs[0].pid, 5);
	proto_list_free(&l);
	/* Reserved bits set, a required field missing, a repeated scalar. */
	b.data[2] = 1;
	assert_int_equal(decode_with(DEC_LIST, b.data, b.len), -EPROTO);
	buf_reset(&b);
	nest = proto_tlv_nest_start(&b, PROTO_LIST_A_PROC);
	proto_tlv_put_u32(&b, PROTO_PROC_A_UID, 5);
	assert_int_equal(proto_tlv_nest_end(&b, nest), 0);
	assert_int_equal(decode_with(DEC_LIST, b.data, b.len), -EPROTO);
	buf_reset(&b);
	proto_tlv_put_u32(&b, PROTO_DUMP_A_FLAGS, 1);
	proto_tlv_put_u32(&b, PROTO_DUMP_A_FLAGS, 2);
	assert_int_equal(decode_with(DEC_DUMP_REQ, b.data, b.len), -EPROTO);
	buf_free(&b);
}

/* Offsets where a top-level attribute starts or the payload ends. */
static int at_boundary(const struct buf *b, size_t n)
{
	size_t off = 0;

	while (off < n) {
		uint32_t len;

		memcpy(&len, b->data + off + 4, 4); /* host is little endian */
		off += PROTO_TLV_HDR_SIZE + len;
	}
	return off == n;
}

static void test_truncation(void **state)
{
	struct proto_hdr h;
	struct buf b, msg;
	int which;
	size_t n;

	(void)state;
	buf_init(&b);
	buf_init(&msg);
	for (which = 0; which < DEC_MAX; which++) {
		buf_reset(&b);
		buf_reset(&msg);
		encode_sample(which, &b);
		proto_put_header(&msg, PROTO_RESP_LIST, (uint32_t)b.len);
		buf_append(&msg, b.data, b.len);
		/* The frame catches any cut... */
		for (n = 0; n < msg.len; n++)
			assert_int_equal(proto_parse_message(msg.data, n, PROTO_MAX_RESPONSE, &h,
							     NULL), -EPROTO);
		assert_int_equal(proto_parse_message(msg.data, msg.len, PROTO_MAX_RESPONSE, &h,
						     NULL), 0);
		/* ...and a payload cut inside an attribute fails on its own;
		 * one cut between attributes is a shorter valid list or a
		 * missing field, never a crash or a leak. */
		for (n = 0; n < b.len; n++) {
			int ret = decode_copy(which, b.data, n);

			if (!at_boundary(&b, n))
				assert_int_not_equal(ret, 0);
		}
		assert_int_equal(decode_copy(which, b.data, b.len), 0);
	}
	buf_free(&b);
	buf_free(&msg);
}

static void test_garbage(void **state)
{
	uint8_t raw[512];
	struct buf b;
	int i, which, k, nmut;

	(void)state;
	buf_init(&b);
	for (i = 0; i < 4000; i++) {
		size_t len = rng() % sizeof(raw);

		for (k = 0; k < (int)len; k++)
			raw[k] = (uint8_t)rng();
		for (which = 0; which < DEC_MAX; which++)
			decode_copy(which, raw, len);
	}
	/* Random bytes rarely get past the first attribute: mutating valid
	 * messages reaches deeper. */
	for (i = 0; i < 4000; i++) {
		int src = (int)(rng() % DEC_MAX);

		buf_reset(&b);
		encode_sample(src, &b);
		nmut = (int)(rng() % 4) + 1;
		for (k = 0; k < nmut; k++)
			b.data[rng() % b.len] = (char)rng();
		for (which = 0; which < DEC_MAX; which++)
			decode_copy(which, b.data, b.len);
	}
	buf_free(&b);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stackset_rejects),
		cmocka_unit_test(test_stackset_modules),
		cmocka_unit_test(test_embedded_nul_rejected),
		cmocka_unit_test(test_string_limits),
		cmocka_unit_test(test_unknown_and_reserved),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
