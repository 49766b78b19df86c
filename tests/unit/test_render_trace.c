/* render_trace: a timeline as Trace Event Format.  The file has one event
 * a line, so this reads it back line by line and checks what speedscope
 * and Perfetto need: per thread, B and E well nested (an E ends the frame
 * its thread opened last, by name), timestamps non-decreasing, nothing
 * left open; metadata naming every process and thread; consecutive
 * samples merged into one bar, gaps ending the frames, calls holding
 * their stack with the samples within nested under them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "render.h"
#include "render_trace.h"
#include "tlset.h"
#include "tlset_build.h"

/* python3 (tid 7): samples every 10 ms in work_a, a CUDA call from
 * another stack at 33 ms, a memory event.  worker (8): samples in spin_b
 * 5..95 ms, a CUDA call at 40 ms for 30 ms made from spin_b itself.
 * sleeper (9): two off-CPU blocks with a gap between them. */
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
	int cpu, off, cuda, mem;

	assert_non_null(t);
	cpu = tlset_type(t, "cpu");
	off = tlset_type(t, "off-cpu");
	cuda = tlset_type(t, "cuda");
	mem = tlset_type(t, "memory");
	assert_int_equal(tlset_thread(t, 7, 7, "python3"), 0);
	assert_int_equal(tlset_thread(t, 7, 8, "worker"), 1);
	assert_int_equal(tlset_thread(t, 7, 9, "sleeper"), 2);
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
	event(t, T0 + 40 * MS, 30 * MS, 1, b, cuda);
	event(t, T0 + 50 * MS, 4096, 0, a, mem);
	t->rate_hz = 100;
	tlset_sort(t);
	return t;
}

/* What the file showed: per thread, how many bars began per name. */
struct seen {
	unsigned metas, instants, events;
	char names[3][32];
	unsigned work_a, spin_b, sleep, cuda7, cuda8, cuda8_under_spin_b;
	double cuda7_begin, cuda7_end, sleep_end[2], spin_b_end;
};

static void str_field(const char *line, const char *key, char *out, size_t len)
{
	const char *p = strstr(line, key), *q;

	out[0] = '\0';
	if (!p)
		return;
	p += strlen(key);
	q = strchr(p, '"');
	if (q && (size_t)(q - p) < len) {
		memcpy(out, p, (size_t)(q - p));
		out[q - p] = '\0';
	}
}

static double num_field(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	assert_non_null(p);
	return strtod(p + strlen(key), NULL);
}

/* Check nesting and order, line by line; count what matters. */
static void read_back(const char *text, struct seen *s)
{
	char stack[3][16][64], name[64], ph[4], line[512];
	unsigned depth[3] = {0}, tid;
	double last[3] = {-1e18, -1e18, -1e18}, ts;
	const char *p = text, *nl;
	size_t n;

	memset(s, 0, sizeof(*s));
	for (; (nl = strchr(p, '\n')) || *p; p = nl ? nl + 1 : p + strlen(p)) {
		n = nl ? (size_t)(nl - p) : strlen(p);
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		if (!strstr(line, "\"ph\":"))
			continue;
		str_field(line, "\"ph\":\"", ph, sizeof(ph));
		str_field(line, "\"name\":\"", name, sizeof(name));
		tid = (unsigned)num_field(line, "\"tid\":");
		assert_true(tid >= 7 && tid <= 9);
		tid -= 7;
		assert_int_equal(num_field(line, "\"pid\":"), 7);
		if (!strcmp(ph, "M")) {
			s->metas++;
			if (!strcmp(name, "thread_name"))
				str_field(line, "\"args\":{\"name\":\"", s->names[tid], 32);
			if (!strcmp(name, "process_name"))
				assert_non_null(strstr(line, "\"args\":{\"name\":\"python3\"}"));
			continue;
		}
		ts = num_field(line, "\"ts\":");
		assert_true(ts >= last[tid]); /* non-decreasing per thread */
		last[tid] = ts;
		s->events++;
		if (!strcmp(ph, "i")) {
			s->instants++;
			assert_non_null(strstr(line, "\"bytes\":4096"));
			continue;
		}
		assert_null(strstr(line, "\"args\"")); /* speedscope keys frames by name+args */
		if (!strcmp(ph, "B")) {
			assert_true(depth[tid] < 16);
			if (!strcmp(name, "work_a (/w/app.py:3)"))
				s->work_a++;
			if (!strcmp(name, "spin_b"))
				s->spin_b++;
			if (!strcmp(name, "[sleep]"))
				s->sleep++;
			if (!strcmp(name, "[CUDA call]") && tid == 0) {
				s->cuda7++;
				s->cuda7_begin = ts;
			}
			if (!strcmp(name, "[CUDA call]") && tid == 1) {
				s->cuda8++;
				s->cuda8_under_spin_b +=
				    depth[1] == 2 && !strcmp(stack[1][1], "spin_b");
			}
			snprintf(stack[tid][depth[tid]++], 64, "%s", name);
			continue;
		}
		assert_string_equal(ph, "E");
		assert_true(depth[tid] > 0);
		assert_string_equal(stack[tid][--depth[tid]], name); /* well nested */
		if (!strcmp(name, "[CUDA call]") && tid == 0)
			s->cuda7_end = ts;
		if (!strcmp(name, "[sleep]") && s->sleep <= 2)
			s->sleep_end[s->sleep - 1] = ts;
		if (!strcmp(name, "spin_b"))
			s->spin_b_end = ts;
	}
	assert_int_equal(depth[0] + depth[1] + depth[2], 0); /* nothing left open */
}

static void test_render(void **state)
{
	struct tlset *t = sample_timeline();
	struct seen s;
	struct buf out;

	(void)state;
	buf_init(&out);
	assert_true(render_format_timeline("trace"));
	assert_string_equal(render_format_ext("trace"), ".trace.json");
	assert_int_equal(render_format("trace", t->ss, NULL, &out), -EINVAL);
	assert_int_equal(render_timeline("trace", t, &out), 0);
	assert_non_null(buf_cstr(&out)); /* a buf is bytes: end them for strstr */
	assert_false(out.failed);
	assert_non_null(strstr(out.data, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":"
					 "\"profd\",\"startTimeNs\":1700000000000000000,"));
	assert_non_null(strstr(out.data, "\"traceEvents\":["));
	read_back(out.data, &s);
	/* process_name once, thread_name and thread_sort_index per thread. */
	assert_int_equal(s.metas, 7);
	assert_string_equal(s.names[0], "python3");
	assert_string_equal(s.names[1], "worker");
	assert_string_equal(s.names[2], "sleeper");
	/* work_a: one bar, cut once by the CUDA call from another stack. */
	assert_int_equal(s.work_a, 2);
	assert_int_equal(s.cuda7, 1);
	assert_true(s.cuda7_begin == 33000.0 && s.cuda7_end == 35000.0);
	/* spin_b: one bar from the first sample to a period after the last,
	 * the CUDA call made from it nested under it. */
	assert_int_equal(s.spin_b, 1);
	assert_true(s.spin_b_end == 105000.0);
	assert_int_equal(s.cuda8, 1);
	assert_int_equal(s.cuda8_under_spin_b, 1);
	/* The sleeper: two blocks, the gap between them ends the frames. */
	assert_int_equal(s.sleep, 2);
	assert_true(s.sleep_end[0] == 15000.0 && s.sleep_end[1] == 70000.0);
	assert_int_equal(s.instants, 1);
	buf_free(&out);
	tlset_free(t);
}

/* A sample a long way after the last one starts a bar of its own. */
static void test_gap(void **state)
{
	static const uint32_t k[] = {FRAME_NATIVE};
	static const char *const n[] = {"busy"};
	struct tlset *t = tlset_new();
	struct seen s;
	struct buf out;
	uint32_t st;
	int cpu;

	(void)state;
	buf_init(&out);
	cpu = tlset_type(t, "cpu");
	assert_int_equal(tlset_thread(t, 7, 7, "python3"), 0);
	st = stack_of(t, k, n, 1);
	event(t, T0, 1, 0, st, cpu);
	event(t, T0 + 11 * MS, 1, 0, st, cpu);	/* jitter: the same bar */
	event(t, T0 + 100 * MS, 1, 0, st, cpu); /* a gap: a new one */
	t->rate_hz = 100;
	tlset_sort(t);
	assert_int_equal(render_timeline("trace", t, &out), 0);
	assert_non_null(buf_cstr(&out)); /* a buf is bytes: end them for strstr */
	read_back(out.data, &s);
	assert_int_equal(s.events, 4);
	assert_non_null(strstr(out.data, "{\"ph\":\"E\",\"name\":\"busy\",\"cat\":\"native\","
					 "\"ts\":21000,"));
	assert_non_null(strstr(out.data, "{\"ph\":\"E\",\"name\":\"busy\",\"cat\":\"native\","
					 "\"ts\":110000,"));
	buf_free(&out);
	tlset_free(t);
}

/* Nothing recorded: a valid file with no events. */
static void test_empty(void **state)
{
	struct tlset *t = tlset_new();
	struct buf out;

	(void)state;
	buf_init(&out);
	assert_int_equal(render_timeline("trace", t, &out), 0);
	assert_non_null(buf_cstr(&out)); /* a buf is bytes: end them for strstr */
	assert_non_null(strstr(out.data, "\"traceEvents\":[]"));
	buf_free(&out);
	tlset_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_render),
	    cmocka_unit_test(test_gap),
	    cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
