/* Shared by the protocol unit tests: sample messages and a checked
 * "decode with any decoder" helper.  Include after <cmocka.h>. */
#ifndef PROFD_TEST_PROTOCOL_FIXTURES_H
#define PROFD_TEST_PROTOCOL_FIXTURES_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"
#include "protocol_tlv.h"

static inline uint64_t rng(void)
{
	/* xorshift64: fixed seed so a failure reproduces. */
	static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static inline char *repeat_char(char c, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static inline void assert_str_or_null(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

static inline int is_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		if (*b++)
			return 0;
	return 1;
}

/* Decode with one decoder, check a failure left the output empty, and
 * free a success.  Returns the decoder's result. */
enum { DEC_DUMP_REQ, DEC_LIST, DEC_STATS, DEC_ERROR, DEC_STACKSET, DEC_MAX };

static inline int decode_with(int which, const void *data, size_t len)
{
	struct proto_dump_req r;
	struct proto_list l;
	struct proto_stats s;
	struct proto_error e;
	struct stackset *ss;
	int ret = 0;

	switch (which) {
	case DEC_DUMP_REQ:
		ret = proto_decode_dump_req(data, len, &r);
		assert_true(ret || r.type);
		assert_true(!ret || is_zero(&r, sizeof(r)));
		proto_dump_req_free(&r);
		break;
	case DEC_LIST:
		ret = proto_decode_list(data, len, &l);
		assert_true(!ret || is_zero(&l, sizeof(l)));
		proto_list_free(&l);
		break;
	case DEC_STATS:
		ret = proto_decode_stats(data, len, &s);
		assert_true(!ret || is_zero(&s, sizeof(s)));
		proto_stats_free(&s);
		break;
	case DEC_ERROR:
		ret = proto_decode_error(data, len, &e);
		assert_true(ret || e.code > 0);
		assert_true(!ret || is_zero(&e, sizeof(e)));
		proto_error_free(&e);
		break;
	case DEC_STACKSET:
		ss = proto_decode_stackset(data, len, &ret);
		assert_true(ret ? !ss : !!ss);
		stackset_free(ss);
		break;
	}
	assert_true(ret == 0 || ret == -EPROTO || ret == -EMSGSIZE);
	return ret;
}

/* Same, on an exact-size heap copy so ASan sees any overread. */
static inline int decode_copy(int which, const void *data, size_t len)
{
	void *copy = malloc(len ? len : 1);
	int ret;

	assert_non_null(copy);
	memcpy(copy, data, len);
	ret = decode_with(which, copy, len);
	free(copy);
	return ret;
}

/* Frames in binaries: "main" in the program, "run" in a library without
 * a build-id, the leaves in either or none (the same name in two
 * binaries is two frames). */
static inline struct stackset *sample_stackset(size_t nstacks)
{
	static const char *const names[] = { "main", "run", "work", "do_syscall_64_[k]",
					     "compute (app.py:10)", "cudaLaunchKernel" };
	static const uint32_t kinds[] = { FRAME_NATIVE, FRAME_NATIVE, FRAME_NATIVE,
					  FRAME_KERNEL, FRAME_PYTHON, FRAME_GPU };
	static const uint32_t in[] = { 1, 2, 0, 0, 0, 0 }; /* index into mods */
	struct stackset *ss = stackset_new();
	uint32_t ids[64], mods[3];
	size_t i;

	assert_non_null(ss);
	assert_int_equal(stackset_set_str(&ss->title, "python3 (pid 1234)"), 0);
	ss->start_ns = 1700000000000000000ULL;
	ss->end_ns = ss->start_ns + 10;
	ss->rate_hz = 99;
	mods[0] = 0;
	mods[1] = (uint32_t)stackset_module(ss, "/usr/bin/python3.11",
					    "4a1c7e0f5b3d2e6f8091a2b3c4d5e6f708192a3b");
	mods[2] = (uint32_t)stackset_module(ss, "/usr/lib/libfoo.so", "");
	assert_true(mods[1] == 1 && mods[2] == 2);
	for (i = 0; i < nstacks; i++) {
		/* Distinct stacks: the index in base 6 picks the frames. */
		uint32_t depth = 0;
		size_t v = i;
		char leaf[32];
		int64_t id;

		do {
			id = stackset_intern_in(ss, kinds[v % 6], names[v % 6], mods[in[v % 6]]);
			assert_true(id >= 0);
			ids[depth++] = (uint32_t)id;
			v /= 6;
		} while (v);
		snprintf(leaf, sizeof(leaf), "leaf_%zu", i % 100);
		id = stackset_intern_in(ss, FRAME_NATIVE, leaf, mods[i % 3]);
		assert_true(id >= 0);
		ids[depth++] = (uint32_t)id;
		assert_int_equal(stackset_add(ss, ids, depth, i + 1), 0);
	}
	return ss;
}

/* One valid, non-trivial payload of each kind. */
static inline void encode_sample(int which, struct buf *b)
{
	uint32_t pids[] = { 1, 42, 4194304 };
	struct proto_dump_req r = { .pids = pids, .npids = 3, .comm = "python3",
				    .exe = "/usr/bin/python3.11", .type = "cpu",
				    .since_ns = 5, .until_ns = 6, .flags = PROTO_DUMP_BY_THREAD };
	uint64_t totals[] = { 12, 3000000000ull };
	struct proto_proc procs[] = {
		{ .pid = 7, .uid = 1000, .flags = PROTO_PROC_PYTHON, .start_time = 99,
		  .samples = 12, .totals = totals, .ntotals = 2, .comm = "python3",
		  .exe = "/usr/bin/python3" },
		{ .pid = 8, .flags = PROTO_PROC_EXITED, .exit_ns = 5 },
	};
	struct proto_list_type types[] = { { "cpu", "samples" }, { "off-cpu", "nanoseconds" } };
	struct proto_list l = { .procs = procs, .n = 2, .types = types, .ntypes = 2 };
	struct proto_stats s = { 0 };
	struct stackset *ss;

	switch (which) {
	case DEC_DUMP_REQ:
		assert_int_equal(proto_encode_dump_req(b, &r), 0);
		break;
	case DEC_LIST:
		assert_int_equal(proto_encode_list(b, &l), 0);
		break;
	case DEC_STATS:
		assert_int_equal(proto_stats_add(&s, "samples", 10), 0);
		assert_int_equal(proto_stats_add(&s, "lost", 1), 0);
		assert_int_equal(proto_encode_stats(b, &s), 0);
		proto_stats_free(&s);
		break;
	case DEC_ERROR:
		assert_int_equal(proto_encode_error(b, EPERM, "not your process"), 0);
		break;
	case DEC_STACKSET:
		ss = sample_stackset(20);
		assert_int_equal(proto_encode_stackset(b, ss), 0);
		stackset_free(ss);
		break;
	}
}

#endif
