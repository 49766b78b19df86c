/* Protocol payloads: every message type survives a round trip.  Hostile
 * bytes are in test_protocol_hostile.c, sockets in test_protocol_io.c. */
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

/* ---- round trips ---- */

static void test_dump_req_roundtrip(void **state)
{
	struct proto_dump_req in = { 0 }, out;
	struct buf b;
	size_t i;

	(void)state;
	buf_init(&b);
	in.npids = 5000;
	in.pids = calloc(in.npids, sizeof(*in.pids));
	assert_non_null(in.pids);
	for (i = 0; i < in.npids; i++)
		in.pids[i] = (uint32_t)(i * 7 + 1);
	in.comm = "python3";
	in.exe = repeat_char('x', 4000);
	in.type = "gpu-driver";
	in.service = "myapp";
	in.unit = "myapp.service";
	in.container = "3f4e5a6b7c8d";
	in.cgroup = "/kubepods/burstable";
	in.since_ns = 1;
	in.until_ns = UINT64_MAX;
	in.flags = PROTO_DUMP_PYTHON_ONLY | PROTO_DUMP_ALL | (1u << 31);
	assert_int_equal(proto_encode_dump_req(&b, &in), 0);
	assert_true(b.len <= PROTO_MAX_REQUEST);
	assert_int_equal(proto_decode_dump_req(b.data, b.len, &out), 0);
	assert_int_equal(out.npids, in.npids);
	assert_memory_equal(out.pids, in.pids, in.npids * sizeof(*in.pids));
	assert_string_equal(out.comm, in.comm);
	assert_string_equal(out.exe, in.exe);
	assert_string_equal(out.type, in.type);
	assert_string_equal(out.service, in.service);
	assert_string_equal(out.unit, in.unit);
	assert_string_equal(out.container, in.container);
	assert_string_equal(out.cgroup, in.cgroup);
	assert_true(out.since_ns == 1 && out.until_ns == UINT64_MAX);
	assert_int_equal(out.flags, in.flags); /* unknown bits kept for the daemon */
	proto_dump_req_free(&out);
	proto_dump_req_free(&out); /* idempotent */
	proto_dump_req_free(NULL);
	free(in.pids);
	free(in.exe);
	buf_free(&b);
}

static void test_dump_req_defaults(void **state)
{
	struct proto_dump_req in = { 0 }, out;
	struct buf b;

	(void)state;
	buf_init(&b);
	assert_int_equal(proto_encode_dump_req(&b, &in), 0);
	assert_int_equal(proto_decode_dump_req(b.data, b.len, &out), 0);
	assert_int_equal(out.npids, 0);
	assert_null(out.pids);
	assert_null(out.comm);
	assert_null(out.exe);
	assert_string_equal(out.type, "cpu");
	assert_true(out.since_ns == 0 && out.until_ns == 0 && out.flags == 0);
	proto_dump_req_free(&out);
	/* An empty payload is a valid request too. */
	assert_int_equal(proto_decode_dump_req(NULL, 0, &out), 0);
	assert_string_equal(out.type, "cpu");
	proto_dump_req_free(&out);
	in.npids = 1; /* pids missing */
	assert_int_equal(proto_encode_dump_req(&b, &in), -EINVAL);
	buf_free(&b);
}

static void test_list_roundtrip(void **state)
{
	struct proto_list in = { 0 }, out;
	char *exe = repeat_char('/', PROTO_MAX_STRING);
	struct buf b;
	size_t i;
	int k;

	(void)state;
	buf_init(&b);
	assert_int_equal(proto_encode_list(&b, &in), 0);
	assert_int_equal(b.len, 0);
	assert_int_equal(proto_decode_list(b.data, b.len, &out), 0);
	assert_int_equal(out.n, 0);
	proto_list_free(&out);

	in.n = 300;
	in.procs = calloc(in.n, sizeof(*in.procs));
	assert_non_null(in.procs);
	for (i = 0; i < in.n; i++) {
		in.procs[i] = (struct proto_proc){ .pid = (uint32_t)i + 1, .uid = (uint32_t)i,
						   .flags = (uint32_t)i % 4, .start_time = i << 40,
						   .samples = i * 1000 };
		in.procs[i].comm = i % 3 ? "worker" : NULL;
		in.procs[i].exe = i == 5 ? exe : i % 2 ? "/bin/sh" : NULL;
		/* A workload on some: every field, or the service alone. */
		for (k = 0; i % 4 == 1 && k < PROTO_IDENT_N; k++)
			in.procs[i].ident[k] = (char *)proto_ident_name(k);
		if (i % 4 == 2)
			in.procs[i].ident[PROTO_IDENT_SERVICE] = "svc";
	}
	/* RSS points: none, one, and the most a decoder takes. */
	uint64_t *hist = calloc(2 * PROTO_RSS_POINTS_MAX, sizeof(*hist));

	assert_non_null(hist);
	for (i = 0; i < 2 * PROTO_RSS_POINTS_MAX; i++)
		hist[i] = i % 2 ? (i << 20) : 1700000000000000000ull + i;
	in.procs[1].rss_history = hist;
	in.procs[1].nrss = 1;
	in.procs[2].rss_history = hist;
	in.procs[2].nrss = PROTO_RSS_POINTS_MAX;
	assert_int_equal(proto_encode_list(&b, &in), 0);
	assert_int_equal(proto_decode_list(b.data, b.len, &out), 0);
	assert_int_equal(out.n, in.n);
	for (i = 0; i < in.n; i++) {
		const struct proto_proc *a = &in.procs[i], *o = &out.procs[i];

		assert_int_equal(o->pid, a->pid);
		assert_int_equal(o->uid, a->uid);
		assert_int_equal(o->flags, a->flags);
		assert_true(o->start_time == a->start_time && o->samples == a->samples);
		assert_str_or_null(o->comm, a->comm);
		assert_str_or_null(o->exe, a->exe);
		for (k = 0; k < PROTO_IDENT_N; k++)
			assert_str_or_null(o->ident[k], a->ident[k]);
		assert_int_equal(o->nrss, a->nrss);
		if (a->nrss)
			assert_memory_equal(o->rss_history, a->rss_history,
					    2 * a->nrss * sizeof(*a->rss_history));
	}
	proto_list_free(&out);
	/* One point more than a decoder takes is refused. */
	in.procs[2].nrss = PROTO_RSS_POINTS_MAX + 1;
	hist = realloc(hist, 2 * (PROTO_RSS_POINTS_MAX + 1) * sizeof(*hist));
	assert_non_null(hist);
	hist[2 * PROTO_RSS_POINTS_MAX] = hist[2 * PROTO_RSS_POINTS_MAX + 1] = 1;
	in.procs[1].rss_history = in.procs[2].rss_history = hist;
	buf_reset(&b);
	assert_int_equal(proto_encode_list(&b, &in), 0);
	assert_int_equal(proto_decode_list(b.data, b.len, &out), -EMSGSIZE);
	assert_int_equal(out.n, 0);
	free(hist);
	proto_list_free(NULL);
	free(in.procs);
	free(exe);
	buf_free(&b);
}

/* Each profile type's weights in its own unit, and when a process
 * ended: what list shows apart from the CPU samples. */
static void test_list_totals_roundtrip(void **state)
{
	struct proto_list_type types[] = { { "cpu", "samples" }, { "off-cpu", "nanoseconds" },
					  { "mmap", "bytes" } };
	uint64_t t0[] = { 12, 5000000000ull, (uint64_t)-4096 }, t1[] = { 1, 2000000000ull };
	struct proto_proc procs[] = {
		{ .pid = 1, .samples = 12, .totals = t0, .ntotals = 3 },
		{ .pid = 2, .flags = PROTO_PROC_EXITED, .exit_ns = 1700000000000000000ull,
		  .samples = 1, .totals = t1, .ntotals = 2 }, /* the rest: 0 */
		{ .pid = 3 },
	};
	struct proto_list in = { .procs = procs, .n = 3, .types = types, .ntypes = 3,
				 .rate_hz = 999, .comm_traced = true }, out;
	struct buf b;
	size_t i;

	(void)state;
	buf_init(&b);
	assert_int_equal(proto_encode_list(&b, &in), 0);
	assert_int_equal(proto_decode_list(b.data, b.len, &out), 0);
	assert_int_equal(out.rate_hz, 999);
	assert_true(out.comm_traced);
	assert_int_equal(out.ntypes, 3);
	for (i = 0; i < 3; i++) {
		assert_string_equal(out.types[i].name, types[i].name);
		assert_string_equal(out.types[i].unit, types[i].unit);
	}
	assert_int_equal(out.n, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(out.procs[i].exit_ns, procs[i].exit_ns);
		assert_int_equal(out.procs[i].samples, procs[i].samples);
		assert_int_equal(out.procs[i].ntotals, procs[i].ntotals);
		if (procs[i].ntotals)
			assert_memory_equal(out.procs[i].totals, procs[i].totals,
					    procs[i].ntotals * sizeof(uint64_t));
	}
	assert_null(out.procs[2].totals);
	proto_list_free(&out);
	/* More weights than types: nothing says what the last one counts. */
	procs[1].ntotals = 4;
	buf_reset(&b);
	assert_int_equal(proto_encode_list(&b, &in), -EINVAL);
	assert_int_equal(b.len, 0);
	in.ntypes = PROTO_TYPES_MAX + 1;
	assert_int_equal(proto_encode_list(&b, &in), -EINVAL);
	buf_free(&b);
}

/* The types may follow the processes whose weights they name; a process
 * with more weights than the list has types, a type without its unit,
 * or more types than a decoder takes are refused. */
static void test_list_totals_refused(void **state)
{
	uint64_t w[2] = { 7, 8 };
	struct proto_list l;
	struct buf b;
	size_t nest, i;

	(void)state;
	buf_init(&b);
	nest = proto_tlv_nest_start(&b, PROTO_LIST_A_PROC);
	proto_tlv_put_u32(&b, PROTO_PROC_A_PID, 1);
	proto_tlv_put_u64_array(&b, PROTO_PROC_A_TOTALS, w, 2);
	assert_int_equal(proto_tlv_nest_end(&b, nest), 0);
	assert_int_equal(proto_decode_list(b.data, b.len, &l), -EPROTO); /* no types */
	for (i = 0; i < 2; i++) {
		nest = proto_tlv_nest_start(&b, PROTO_LIST_A_TYPE);
		assert_int_equal(proto_tlv_put_str(&b, PROTO_TYPE_A_NAME, i ? "gil" : "cpu"), 0);
		assert_int_equal(proto_tlv_put_str(&b, PROTO_TYPE_A_UNIT, "samples"), 0);
		assert_int_equal(proto_tlv_nest_end(&b, nest), 0);
	}
	assert_int_equal(proto_decode_list(b.data, b.len, &l), 0);
	assert_int_equal(l.ntypes, 2);
	assert_string_equal(l.types[1].name, "gil");
	assert_int_equal(l.procs[0].ntotals, 2);
	assert_int_equal(l.procs[0].totals[1], 8);
	proto_list_free(&l);

	nest = proto_tlv_nest_start(&b, PROTO_LIST_A_TYPE);
	assert_int_equal(proto_tlv_put_str(&b, PROTO_TYPE_A_NAME, "wall"), 0);
	assert_int_equal(proto_tlv_nest_end(&b, nest), 0);
	assert_int_equal(decode_with(DEC_LIST, b.data, b.len), -EPROTO);

	buf_reset(&b);
	for (i = 0; i <= PROTO_TYPES_MAX; i++) {
		nest = proto_tlv_nest_start(&b, PROTO_LIST_A_TYPE);
		assert_int_equal(proto_tlv_put_str(&b, PROTO_TYPE_A_NAME, "cpu"), 0);
		assert_int_equal(proto_tlv_put_str(&b, PROTO_TYPE_A_UNIT, "samples"), 0);
		assert_int_equal(proto_tlv_nest_end(&b, nest), 0);
	}
	assert_int_equal(decode_with(DEC_LIST, b.data, b.len), -EMSGSIZE);
	buf_free(&b);
}

/* A list from a profd before per-type weights: its attributes only.  It
 * decodes, with no types, no weights and no exit time. */
static void test_list_old_style(void **state)
{
	struct proto_list l;
	struct buf b;
	size_t nest;

	(void)state;
	buf_init(&b);
	nest = proto_tlv_nest_start(&b, PROTO_LIST_A_PROC);
	proto_tlv_put_u32(&b, PROTO_PROC_A_PID, 42);
	proto_tlv_put_u32(&b, PROTO_PROC_A_UID, 1000);
	proto_tlv_put_u32(&b, PROTO_PROC_A_FLAGS, PROTO_PROC_EXITED);
	proto_tlv_put_u64(&b, PROTO_PROC_A_START_TIME, 777);
	proto_tlv_put_u64(&b, PROTO_PROC_A_SAMPLES, 31);
	assert_int_equal(proto_tlv_put_str(&b, PROTO_PROC_A_COMM, "bash"), 0);
	assert_int_equal(proto_tlv_put_str(&b, PROTO_PROC_A_EXE, "/usr/bin/bash"), 0);
	assert_int_equal(proto_tlv_nest_end(&b, nest), 0);
	assert_int_equal(proto_decode_list(b.data, b.len, &l), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.ntypes, 0);
	assert_null(l.types);
	assert_int_equal(l.procs[0].pid, 42);
	assert_int_equal(l.procs[0].samples, 31);
	assert_int_equal(l.procs[0].flags, PROTO_PROC_EXITED);
	assert_int_equal(l.procs[0].exit_ns, 0);
	assert_null(l.procs[0].totals);
	assert_int_equal(l.procs[0].ntotals, 0);
	assert_string_equal(l.procs[0].comm, "bash");
	proto_list_free(&l);
	buf_free(&b);
}

static void test_stats_roundtrip(void **state)
{
	struct proto_stats in = { 0 }, out;
	char name[32];
	struct buf b;
	size_t i;

	(void)state;
	buf_init(&b);
	assert_int_equal(proto_encode_stats(&b, &in), 0);
	assert_int_equal(proto_decode_stats(b.data, b.len, &out), 0);
	assert_int_equal(out.n, 0);
	proto_stats_free(&out);

	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "counter_%zu", 99 - i);
		assert_int_equal(proto_stats_add(&in, name, UINT64_MAX - i), 0);
	}
	assert_int_equal(proto_encode_stats(&b, &in), 0);
	assert_int_equal(proto_decode_stats(b.data, b.len, &out), 0);
	assert_int_equal(out.n, in.n);
	for (i = 0; i < in.n; i++) { /* order is kept */
		assert_string_equal(out.items[i].name, in.items[i].name);
		assert_true(out.items[i].value == in.items[i].value);
	}
	/* A decoded set can still grow. */
	assert_int_equal(proto_stats_add(&out, "extra", 1), 0);
	assert_int_equal(out.n, 101);
	assert_int_equal(proto_stats_add(&out, NULL, 1), -EINVAL);
	proto_stats_free(&out);
	proto_stats_free(&in);
	proto_stats_free(NULL);
	buf_free(&b);
}

static void test_error_roundtrip(void **state)
{
	struct proto_error e;
	struct buf b;

	(void)state;
	buf_init(&b);
	assert_int_equal(proto_encode_error(&b, EACCES, "pid 1 belongs to another user"), 0);
	assert_int_equal(proto_decode_error(b.data, b.len, &e), 0);
	assert_int_equal(e.code, EACCES);
	assert_string_equal(e.message, "pid 1 belongs to another user");
	proto_error_free(&e);

	buf_reset(&b);
	assert_int_equal(proto_encode_error(&b, ENOENT, NULL), 0);
	assert_int_equal(proto_decode_error(b.data, b.len, &e), 0);
	assert_int_equal(e.code, ENOENT);
	assert_null(e.message);
	proto_error_free(&e);
	proto_error_free(NULL);

	assert_int_equal(proto_encode_error(&b, 0, "x"), -EINVAL);
	assert_int_equal(proto_encode_error(&b, -EIO, "x"), -EINVAL);
	/* Code missing, zero, or not a positive int. */
	assert_int_equal(proto_decode_error(NULL, 0, &e), -EPROTO);
	buf_reset(&b);
	proto_tlv_put_u32(&b, PROTO_ERROR_A_CODE, 0x80000000u);
	assert_int_equal(proto_decode_error(b.data, b.len, &e), -EPROTO);
	buf_free(&b);
}

/* Same binary (path and build-id) or both none. */
static void assert_modules_equal(const struct ss_module *x, const struct ss_module *y)
{
	if (!x || !y) {
		assert_ptr_equal(x, y);
		return;
	}
	assert_string_equal(x->path, y->path);
	assert_string_equal(x->build_id, y->build_id);
}

static void assert_stacksets_equal(const struct stackset *a, const struct stackset *b)
{
	size_t i;
	uint32_t j;

	assert_str_or_null(a->title, b->title);
	assert_str_or_null(a->unit, b->unit);
	assert_str_or_null(a->type, b->type);
	assert_true(a->start_ns == b->start_ns && a->end_ns == b->end_ns);
	assert_int_equal(a->rate_hz, b->rate_hz);
	assert_int_equal(a->nframes, b->nframes);
	assert_int_equal(a->nstacks, b->nstacks);
	assert_int_equal(a->nmodules, b->nmodules);
	for (i = 0; i < a->nmodules; i++)
		assert_modules_equal(&a->modules[i], &b->modules[i]);
	assert_true(a->total == b->total);
	for (i = 0; i < a->nstacks; i++) {
		const struct ss_stack *x = &a->stacks[i], *y = &b->stacks[i];

		assert_true(x->count == y->count);
		assert_int_equal(x->depth, y->depth);
		for (j = 0; j < x->depth; j++) {
			const struct ss_frame *fx = &a->frames[x->frames[j]];
			const struct ss_frame *fy = &b->frames[y->frames[j]];

			assert_int_equal(fx->kind, fy->kind);
			assert_string_equal(fx->name, fy->name);
			assert_modules_equal(stackset_frame_module(a, x->frames[j]),
					     stackset_frame_module(b, y->frames[j]));
		}
	}
}

static void test_stackset_roundtrip(void **state)
{
	struct stackset *in = sample_stackset(10000), *out, *empty;
	struct buf b;
	int err = 1;

	(void)state;
	buf_init(&b);
	assert_int_equal(in->nstacks, 10000);
	assert_int_equal(stackset_set_str(&in->workload, "service=myapp\nunit=myapp.service\n"), 0);
	assert_int_equal(proto_encode_stackset(&b, in), 0);
	assert_true(b.len <= PROTO_MAX_RESPONSE);
	out = proto_decode_stackset(b.data, b.len, &err);
	assert_non_null(out);
	assert_int_equal(err, 0);
	assert_stacksets_equal(in, out);
	assert_string_equal(out->workload, in->workload);
	/* leaf_0 in three binaries (none, the program, the library): three
	 * frames, kept apart on the way. */
	assert_int_equal(in->nmodules, 2);
	assert_int_equal(out->nframes, in->nframes);
	assert_true(stackset_intern_in(out, FRAME_NATIVE, "leaf_0", 0) < (int64_t)in->nframes);
	assert_true(stackset_intern_in(out, FRAME_NATIVE, "leaf_0", 1) < (int64_t)in->nframes);
	assert_true(stackset_intern_in(out, FRAME_NATIVE, "leaf_0", 2) < (int64_t)in->nframes);
	assert_string_equal(out->modules[0].build_id, "4a1c7e0f5b3d2e6f8091a2b3c4d5e6f708192a3b");
	assert_string_equal(out->modules[1].build_id, "");
	stackset_free(out);
	stackset_free(in);

	/* Empty set, no title, other unit. */
	empty = stackset_new();
	assert_non_null(empty);
	assert_int_equal(stackset_set_str(&empty->unit, "nanoseconds"), 0);
	buf_reset(&b);
	assert_int_equal(proto_encode_stackset(&b, empty), 0);
	out = proto_decode_stackset(b.data, b.len, NULL);
	assert_non_null(out);
	assert_stacksets_equal(empty, out);
	stackset_free(out);
	stackset_free(empty);
	buf_free(&b);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dump_req_roundtrip),
		cmocka_unit_test(test_dump_req_defaults),
		cmocka_unit_test(test_list_roundtrip),
		cmocka_unit_test(test_list_totals_roundtrip),
		cmocka_unit_test(test_list_totals_refused),
		cmocka_unit_test(test_list_old_style),
		cmocka_unit_test(test_stats_roundtrip),
		cmocka_unit_test(test_error_roundtrip),
		cmocka_unit_test(test_stackset_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
