/* test_pystack: the userspace Python stack reader over a memory image of
 * its own making.  The thread states and frames are built in this test's
 * own memory with a made-up layout, and read back through
 * process_vm_readv on our own pid, exactly as profd reads another
 * process: the walk's order, shim frames skipped, the instruction offset
 * of each kind, a chain that loops or breaks, and the struct pthread tid
 * offset found from this process's real threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pystack.h"

/* A made-up 3.13-like layout: every offset in 8-byte words. */
enum { F_PREV = 0, F_CODE = 1, F_INSTR = 2, F_OWNER = 3, F_WORDS = 4 };
enum { T_NEXT = 0, T_FRAME = 1, T_PTHREAD = 2, T_NATIVE = 3, T_WORDS = 4 };
#define ADAPTIVE 0x40
#define OWNER_CSTACK 3

static void layout(struct pyruntime *rt, enum pyoff_frame_kind kind)
{
	struct profd_pyoffsets *o = &rt->off;

	memset(rt, 0, sizeof(*rt));
	memset(o, 0xff, sizeof(*o)); /* PYOFF_NONE everywhere */
	rt->pid = getpid();
	rt->major = 3;
	rt->minor = 13;
	o->frame_kind = kind;
	o->instr_kind = PYOFF_INSTR_CUR_PTR;
	o->runtime_interp_head = 0;
	o->interp_next = 0;
	o->interp_tstate_head = 8;
	o->tstate_next = 8 * T_NEXT;
	o->tstate_frame = 8 * T_FRAME;
	o->tstate_thread_id = 8 * T_PTHREAD;
	o->cframe_current_frame = 8;
	o->frame_previous = 8 * F_PREV;
	o->frame_code = 8 * F_CODE;
	o->frame_instr = 8 * F_INSTR;
	o->frame_owner = 8 * F_OWNER;
	o->frame_owner_cstack = OWNER_CSTACK;
	o->code_adaptive = ADAPTIVE;
}

static void frame(uint64_t *f, uint64_t *prev, uint64_t code, uint64_t instr, uint64_t owner)
{
	f[F_PREV] = (uint64_t)(uintptr_t)prev;
	f[F_CODE] = code;
	f[F_INSTR] = instr;
	f[F_OWNER] = owner;
}

/* leaf -> shim -> middle -> root: three Python frames, leaf first, with
 * their offsets into the bytecode; the shim is not one. */
static void test_walk_order(void **state)
{
	uint64_t leaf[F_WORDS], shim[F_WORDS], mid[F_WORDS], root[F_WORDS], ts[T_WORDS] = {0};
	struct pystack_thread *t = calloc(1, sizeof(*t));
	struct pyruntime rt;

	(void)state;
	layout(&rt, PYOFF_FRAME_DIRECT);
	frame(root, NULL, 0x3000, 0x3000 + ADAPTIVE + 6, 0);
	frame(mid, root, 0x2000 | 1 /* a tagged _PyStackRef */, 0x2000 + ADAPTIVE + 20, 0);
	frame(shim, mid, 0, 0, OWNER_CSTACK);
	frame(leaf, shim, 0x1000, 0x1000 + ADAPTIVE + 8, 1);
	ts[T_FRAME] = (uint64_t)(uintptr_t)leaf;
	assert_int_equal(pystack_walk(&rt, (uint64_t)(uintptr_t)ts, t), 0);
	assert_int_equal(t->nframes, 3);
	assert_false(t->cut);
	assert_int_equal(t->code[0], 0x1000);
	assert_int_equal(t->instr[0], 8);
	assert_int_equal(t->code[1], 0x2000);
	assert_int_equal(t->instr[1], 20);
	assert_int_equal(t->code[2], 0x3000);
	assert_int_equal(t->instr[2], 6);
	/* The leaf is the first frame of an eval call (a shim is rootward
	 * of it), as the BPF walker marks it; the other two share one. */
	assert_true(t->entry[0]);
	assert_false(t->entry[1]);
	assert_false(t->entry[2]);

	/* Outside Python code: no frames, not cut. */
	ts[T_FRAME] = 0;
	assert_int_equal(pystack_walk(&rt, (uint64_t)(uintptr_t)ts, t), 0);
	assert_int_equal(t->nframes, 0);
	assert_false(t->cut);
	free(t);
}

/* A chain that loops back is cut where it meets a frame again; one that
 * leads into unmapped memory is cut there, with what came before. */
static void test_walk_guards(void **state)
{
	uint64_t a[F_WORDS], b[F_WORDS], ts[T_WORDS] = {0};
	struct pystack_thread *t = calloc(1, sizeof(*t));
	struct pyruntime rt;

	(void)state;
	layout(&rt, PYOFF_FRAME_DIRECT);
	frame(a, b, 0x1000, 0x1000 + ADAPTIVE, 0);
	frame(b, a, 0x2000, 0x2000 + ADAPTIVE, 0);
	ts[T_FRAME] = (uint64_t)(uintptr_t)a;
	assert_int_equal(pystack_walk(&rt, (uint64_t)(uintptr_t)ts, t), 0);
	assert_int_equal(t->nframes, 2);
	assert_true(t->cut);

	b[F_PREV] = 16; /* the zero page: never mapped */
	assert_int_equal(pystack_walk(&rt, (uint64_t)(uintptr_t)ts, t), 0);
	assert_int_equal(t->nframes, 2);
	assert_true(t->cut);

	assert_int_equal(pystack_walk(&rt, 16, t), -EFAULT);
	free(t);
}

/* A stack deeper than PYSTACK_MAX_FRAMES keeps its leafmost frames. */
static void test_walk_deep(void **state)
{
	size_t n = PYSTACK_MAX_FRAMES + 10, i;
	uint64_t(*f)[F_WORDS] = calloc(n, sizeof(*f)), ts[T_WORDS] = {0};
	struct pystack_thread *t = calloc(1, sizeof(*t));
	struct pyruntime rt;

	(void)state;
	layout(&rt, PYOFF_FRAME_DIRECT);
	for (i = 0; i < n; i++)
		frame(f[i], i + 1 < n ? f[i + 1] : NULL, 0x1000 * (i + 1),
		      0x1000 * (i + 1) + ADAPTIVE + 2, 0);
	ts[T_FRAME] = (uint64_t)(uintptr_t)f[0];
	assert_int_equal(pystack_walk(&rt, (uint64_t)(uintptr_t)ts, t), 0);
	assert_int_equal(t->nframes, PYSTACK_MAX_FRAMES);
	assert_true(t->cut);
	assert_int_equal(t->code[0], 0x1000);
	free(f);
	free(t);
}

/* 3.9/3.10: PyFrameObject with an int f_lasti; 3.11/3.12: through
 * tstate->cframe->current_frame. */
static void test_walk_kinds(void **state)
{
	uint64_t leaf[F_WORDS], root[F_WORDS], cframe[2], ts[T_WORDS] = {0};
	struct pystack_thread *t = calloc(1, sizeof(*t));
	struct pyruntime rt;

	(void)state;
	layout(&rt, PYOFF_FRAME_OBJECT);
	rt.off.instr_kind = PYOFF_INSTR_LASTI_UNITS;
	rt.off.frame_owner_cstack = PYOFF_NONE;
	frame(root, NULL, 0x2000, 0xffffffffu /* -1: not started */, 0);
	frame(leaf, root, 0x1000, 0xdead00000007ull /* the high half is not f_lasti's */, 0);
	ts[T_FRAME] = (uint64_t)(uintptr_t)leaf;
	assert_int_equal(pystack_walk(&rt, (uint64_t)(uintptr_t)ts, t), 0);
	assert_int_equal(t->nframes, 2);
	assert_int_equal(t->instr[0], 7);
	assert_int_equal(t->instr[1], -1);
	/* <= 3.10: every frame its own eval call. */
	assert_true(t->entry[0] && t->entry[1]);

	layout(&rt, PYOFF_FRAME_CFRAME);
	rt.off.instr_kind = PYOFF_INSTR_PREV_PTR;
	frame(leaf, NULL, 0x1000, 0x1000 + ADAPTIVE + 4, 0);
	cframe[0] = 0;
	cframe[1] = (uint64_t)(uintptr_t)leaf;
	ts[T_FRAME] = (uint64_t)(uintptr_t)cframe;
	assert_int_equal(pystack_walk(&rt, (uint64_t)(uintptr_t)ts, t), 0);
	assert_int_equal(t->nframes, 1);
	assert_int_equal(t->instr[0], 4);

	/* 3.11: the frame's own is_entry (a byte; here the owner word). */
	rt.off.frame_is_entry = 8 * F_OWNER;
	frame(root, NULL, 0x2000, 0x2000 + ADAPTIVE + 2, 1);
	frame(leaf, root, 0x1000, 0x1000 + ADAPTIVE + 4, 0);
	assert_int_equal(pystack_walk(&rt, (uint64_t)(uintptr_t)ts, t), 0);
	assert_int_equal(t->nframes, 2);
	assert_false(t->entry[0]);
	assert_true(t->entry[1]);
	free(t);
}

/* ---- real threads: the struct pthread tid offset ---- */

#define NTHREADS 4

struct worker {
	pthread_t self;
	pid_t tid;
};

static pthread_barrier_t started, done;

static void *work(void *arg)
{
	struct worker *w = arg;

	w->self = pthread_self();
	w->tid = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&started);
	pthread_barrier_wait(&done);
	return NULL;
}

static size_t own_tids(uint32_t *tids, size_t cap)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) && n < cap)
		if (de->d_name[0] != '.')
			tids[n++] = (uint32_t)strtoul(de->d_name, NULL, 10);
	closedir(d);
	return n;
}

/* Start NTHREADS threads (the main thread is w[NTHREADS]) and leave them
 * waiting on done. */
static void start_workers(struct worker *w, pthread_t *ids)
{
	size_t i;

	pthread_barrier_init(&started, NULL, NTHREADS + 1);
	pthread_barrier_init(&done, NULL, NTHREADS + 1);
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&ids[i], NULL, work, &w[i]), 0);
	w[NTHREADS].self = pthread_self();
	w[NTHREADS].tid = getpid();
	pthread_barrier_wait(&started);
}

static void stop_workers(pthread_t *ids)
{
	size_t i;

	pthread_barrier_wait(&done);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(ids[i], NULL);
	pthread_barrier_destroy(&started);
	pthread_barrier_destroy(&done);
}

static void test_tid_offset(void **state)
{
	struct worker w[NTHREADS + 1];
	pthread_t ids[NTHREADS];
	uint64_t pts[NTHREADS + 1];
	uint32_t tids[64];
	size_t i, ntids;
	int off;

	(void)state;
	start_workers(w, ids);
	ntids = own_tids(tids, 64);
	for (i = 0; i <= NTHREADS; i++)
		pts[i] = (uint64_t)w[i].self;
	off = pystack_tid_offset(getpid(), pts, NTHREADS + 1, tids, ntids);
	assert_true(off >= 0);
	for (i = 0; i <= NTHREADS; i++)
		assert_int_equal(*(pid_t *)((char *)w[i].self + off), w[i].tid);
	/* The main thread alone finds it too: its tid is the pid. */
	assert_int_equal(pystack_tid_offset(getpid(), &pts[NTHREADS], 1, tids, ntids), off);
	/* No thread id of the process anywhere: none found. */
	tids[0] = 1;
	assert_int_equal(pystack_tid_offset(getpid(), pts, NTHREADS + 1, tids, 1), -ENOENT);
	stop_workers(ids);
}

/* The whole reader over a fake runtime whose thread states name real
 * threads by pthread_t only (3.9/3.10): each comes with its tid. */
struct seen {
	uint32_t tid[NTHREADS + 1];
	uint32_t nframes[NTHREADS + 1];
	size_t n;
};

static int note(const struct pystack_thread *t, void *arg)
{
	struct seen *s = arg;

	s->tid[s->n] = t->tid;
	s->nframes[s->n++] = t->nframes;
	return 0;
}

static void test_threads(void **state)
{
	uint64_t ts[NTHREADS + 1][T_WORDS], interp[2], runtime[1], leaf[F_WORDS];
	struct worker w[NTHREADS + 1];
	struct seen s = {.n = 0};
	pthread_t ids[NTHREADS];
	uint32_t tids[64];
	struct pyruntime rt;
	size_t i, ntids;

	(void)state;
	start_workers(w, ids);
	ntids = own_tids(tids, 64);
	layout(&rt, PYOFF_FRAME_DIRECT);
	frame(leaf, NULL, 0x1000, 0x1000 + ADAPTIVE, 0);
	for (i = 0; i <= NTHREADS; i++) {
		ts[i][T_NEXT] = i < NTHREADS ? (uint64_t)(uintptr_t)ts[i + 1] : 0;
		ts[i][T_FRAME] = i == 0 ? (uint64_t)(uintptr_t)leaf : 0;
		ts[i][T_PTHREAD] = (uint64_t)w[i].self;
	}
	interp[0] = 0; /* no next interpreter */
	interp[1] = (uint64_t)(uintptr_t)ts[0];
	runtime[0] = (uint64_t)(uintptr_t)interp;
	rt.runtime_addr = (uint64_t)(uintptr_t)runtime;
	assert_int_equal(pystack_threads(&rt, tids, ntids, note, &s), 0);
	assert_int_equal(s.n, NTHREADS + 1);
	for (i = 0; i <= NTHREADS; i++)
		assert_int_equal(s.tid[i], w[NTHREADS - i].tid); /* oldest first */
	assert_int_equal(s.nframes[NTHREADS], 1);
	assert_int_equal(s.nframes[0], 0);

	/* 3.11+: native_thread_id says it; a list that loops back ends. */
	rt.off.tstate_native_thread_id = 8 * T_NATIVE;
	for (i = 0; i <= NTHREADS; i++)
		ts[i][T_NATIVE] = 1000 + i;
	ts[NTHREADS][T_NEXT] = (uint64_t)(uintptr_t)ts[1];
	s.n = 0;
	assert_int_equal(pystack_threads(&rt, tids, ntids, note, &s), 0);
	assert_int_equal(s.n, NTHREADS + 1);
	assert_int_equal(s.tid[0], 1000 + NTHREADS);
	stop_workers(ids);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_walk_order), cmocka_unit_test(test_walk_guards),
	    cmocka_unit_test(test_walk_deep),  cmocka_unit_test(test_walk_kinds),
	    cmocka_unit_test(test_tid_offset), cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
