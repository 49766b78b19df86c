/* The timeline's way out: a tlset through the protocol (encode, decode,
 * hostile indices refused) and render_gecko's JSON, whose structure
 * tests/data/gecko_check.py checks (meta, one thread per tid, samples in
 * time order, valid stackTable/frameTable/stringTable references,
 * interval markers with their stacks). */
#include <errno.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "protocol.h"
#include "render.h"
#include "render_gecko.h"
#include "scratch.h"
#include "tlset.h"
#include "tlset_build.h"

/* Two busy threads (one Python, one native), a sleeper with off-CPU
 * blocks, a CUDA call; events added out of order. */
static struct tlset *sample_timeline(void)
{
	static const uint32_t kp[] = {FRAME_PYTHON, FRAME_PYTHON, FRAME_NATIVE};
	static const char *const np[] = {"<module> (/w/app.py:10)", "work_a (/w/app.py:3)",
					 "PyNumber_Add"};
	static const uint32_t kn[] = {FRAME_NATIVE, FRAME_NATIVE};
	static const char *const nn[] = {"main", "spin_b"};
	static const uint32_t ks[] = {FRAME_PYTHON, FRAME_KERNEL, FRAME_WAIT};
	static const char *const ns[] = {"sleeper (/w/app.py:20)", "schedule_[k]", "[sleep]"};
	static const uint32_t kc[] = {FRAME_PYTHON, FRAME_GPU};
	static const char *const nc[] = {"step (/w/app.py:30)", "cudaLaunchKernel"};
	struct tlset *t = tlset_new();
	uint32_t a, b, s, c, i;
	int cpu, off, cuda;

	assert_non_null(t);
	cpu = tlset_type(t, "cpu");
	off = tlset_type(t, "off-cpu");
	cuda = tlset_type(t, "cuda");
	assert_int_equal(tlset_thread(t, 7, 7, "python3"), 0);
	assert_int_equal(tlset_thread(t, 7, 8, "worker"), 1);
	assert_int_equal(tlset_thread(t, 7, 9, "sleeper"), 2);
	assert_int_equal(tlset_thread(t, 7, 8, "old"), 1); /* known: same index, renamed */
	assert_int_equal(tlset_thread(t, 7, 8, "worker"), 1);
	a = stack_of(t, kp, np, 3);
	b = stack_of(t, kn, nn, 2);
	s = stack_of(t, ks, ns, 3);
	c = stack_of(t, kc, nc, 2);
	for (i = 10; i-- > 0;) {
		event(t, T0 + i * 10 * MS, 1, 0, a, cpu);
		event(t, T0 + i * 10 * MS + 5 * MS, 1, 1, b, cpu);
	}
	event(t, T0 + 20 * MS, 50 * MS, 2, s, off);
	event(t, T0 + 0 * MS, 15 * MS, 2, s, off);
	event(t, T0 + 33 * MS, 2 * MS, 0, c, cuda);
	t->rate_hz = 100;
	tlset_sort(t);
	return t;
}

static void test_tlset(void **state)
{
	struct tlset *t = sample_timeline();
	struct tl_event bad = {.thread = 3};
	size_t i;

	(void)state;
	assert_int_equal(t->nthreads, 3);
	assert_int_equal(t->nevents, 23);
	for (i = 1; i < t->nevents; i++)
		assert_true(t->events[i - 1].start_ns <= t->events[i].start_ns);
	assert_int_equal(tlset_add(t, &bad), -EINVAL);
	assert_string_equal(t->threads[1].name, "worker");
	tlset_free(t);
	tlset_free(NULL);
}

static void test_protocol_roundtrip(void **state)
{
	struct tlset *t = sample_timeline(), *u;
	struct buf b;
	size_t i;
	int err;

	(void)state;
	t->dropped = 42;
	buf_init(&b);
	assert_int_equal(proto_encode_timeline(&b, t), 0);
	u = proto_decode_timeline(b.data, b.len, &err);
	assert_non_null(u);
	assert_int_equal(u->nevents, t->nevents);
	assert_int_equal(u->nthreads, 3);
	assert_int_equal(u->dropped, 42);
	assert_int_equal(u->rate_hz, 100);
	for (i = 0; i < t->nevents; i++) {
		const struct tl_event *x = &t->events[i], *y = &u->events[i];

		assert_int_equal(x->start_ns, y->start_ns);
		assert_int_equal(x->weight, y->weight);
		assert_int_equal(x->thread, y->thread);
		assert_string_equal(t->types[x->type], u->types[y->type]);
		assert_int_equal(t->ss->stacks[x->stack].depth, u->ss->stacks[y->stack].depth);
	}
	/* Python's names travel with the threads, where there are. */
	assert_null(u->threads[1].pyname);
	tlset_free(u);
	assert_int_equal(stackset_set_str(&t->threads[1].pyname, "Thread-1 (work)"), 0);
	buf_reset(&b);
	assert_int_equal(proto_encode_timeline(&b, t), 0);
	u = proto_decode_timeline(b.data, b.len, &err);
	assert_non_null(u);
	assert_string_equal(u->threads[1].pyname, "Thread-1 (work)");
	assert_string_equal(u->threads[1].name, "worker");
	assert_null(u->threads[0].pyname);
	/* An event naming a stack past the table is malformed. */
	t->events[0].stack = 99;
	buf_reset(&b);
	assert_int_equal(proto_encode_timeline(&b, t), 0);
	assert_null(proto_decode_timeline(b.data, b.len, &err));
	assert_int_equal(err, -EPROTO);
	/* Cut anywhere: refused, never read past the end. */
	for (i = 0; i < b.len; i += 7)
		tlset_free(proto_decode_timeline(b.data, i, NULL));
	tlset_free(u);
	tlset_free(t);
	buf_free(&b);
}

static int run_check(const char *file, char *summary, size_t len)
{
	char script[512], cmd[1200], path[512];
	FILE *p;
	size_t n;

	snprintf(path, sizeof(path), "%s", __FILE__);
	snprintf(script, sizeof(script), "%s/../data/gecko_check.py", dirname(path));
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s'", script, file);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(summary, 1, len - 1, p);
	summary[n] = '\0';
	return pclose(p);
}

static void test_render(void **state)
{
	struct tlset *t = sample_timeline();
	char file[300], summary[8192];
	struct buf out;
	FILE *f;

	(void)state;
	buf_init(&out);
	assert_int_equal(render_timeline("gecko", t, &out), 0);
	assert_int_equal(render_format("gecko", t->ss, NULL, &out), -EINVAL);
	assert_true(render_format_timeline("gecko") && !render_format_timeline("svg"));
	assert_int_equal(render_timeline("svg", t, &out), -EINVAL);
	assert_int_equal(scratch_setup("gecko"), 0);
	snprintf(file, sizeof(file), "%s/t.gecko.json", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(out.data, 1, out.len, f), out.len);
	fclose(f);
	if (system("python3 -c '' 2>/dev/null")) {
		scratch_teardown(NULL);
		skip();
	}
	assert_int_equal(run_check(file, summary, sizeof(summary)), 0);
	/* Three tracks in thread order, the samples on the busy ones, the
	 * sleeper's blocks and the CUDA call as markers with their stacks. */
	assert_non_null(strstr(summary, "\"name\": \"python3 (7)\", \"tid\": 7"));
	assert_non_null(
	    strstr(summary, "\"name\": \"worker (8)\", \"tid\": 8, \"pid\": 7, \"samples\": 10"));
	assert_non_null(
	    strstr(summary, "\"name\": \"sleeper (9)\", \"tid\": 9, \"pid\": 7, \"samples\": 0"));
	assert_non_null(strstr(summary, "\"OffCPU\": {\"n\": 2, \"ms\": 65.0"));
	assert_non_null(strstr(summary, "\"[sleep]\": 1"));
	assert_non_null(strstr(summary, "\"CUDA\": {\"n\": 1, \"ms\": 2.0"));
	assert_non_null(strstr(summary, "\"cudaLaunchKernel\": 1"));
	assert_non_null(strstr(summary, "\"work_a (/w/app.py:3)\": 10"));
	assert_non_null(strstr(summary, "\"first\": 0,"));
	assert_non_null(buf_cstr(&out));
	assert_non_null(strstr(out.data, "\"version\":27"));
	/* Every thread of pid 7 in the process its main thread names. */
	assert_non_null(strstr(out.data, "\"name\":\"worker (8)\",\"processType\":\"default\","
					 "\"processName\":\"python3\""));
	/* A thread Python names is its track's name; the process keeps its
	 * main thread's OS name. */
	assert_int_equal(stackset_set_str(&t->threads[0].pyname, "MainThread"), 0);
	buf_reset(&out);
	assert_int_equal(render_timeline("gecko", t, &out), 0);
	assert_non_null(strstr(buf_cstr(&out),
			       "\"name\":\"MainThread (7)\",\"processType\":\"default\","
			       "\"processName\":\"python3\""));
	scratch_teardown(NULL);
	buf_free(&out);
	tlset_free(t);
}

/* Nothing recorded: a valid file with no threads. */
static void test_empty(void **state)
{
	struct tlset *t = tlset_new();
	struct buf out;

	(void)state;
	buf_init(&out);
	assert_int_equal(render_timeline("gecko", t, &out), 0);
	assert_non_null(buf_cstr(&out)); /* out holds the bytes, not a C string */
	assert_non_null(strstr(out.data, "\"threads\":[]"));
	buf_free(&out);
	tlset_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tlset),
	    cmocka_unit_test(test_protocol_roundtrip),
	    cmocka_unit_test(test_render),
	    cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
