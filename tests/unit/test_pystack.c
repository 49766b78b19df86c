/* test_pystack: walk the Python stacks of live interpreters running a
 * known two-thread workload and check every frame's name and line.
 *
 * Also a tool: "test_pystack --pid PID" prints PID's Python stacks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pymem.h"
#include "pystack.h"
#include "pyinterp.h"

static struct pyinterps interps;

/* The worker thread starts first and is already looping in leaf() when
 * the main thread enters its own leaf().  Markers name the lines the
 * test expects. */
/* clang-format off */
static const char *const workload[] = {
	"import os, sys, threading",
	"OUT = sys.argv[1]",
	"def leaf(tag):",
	"    tmp = os.path.join(OUT, tag + '.tmp')",
	"    with open(tmp, 'w') as f:",
	"        f.write(str(threading.get_native_id()))",
	"    os.replace(tmp, os.path.join(OUT, tag + '.ready'))",
	"    x = 0",
	"    while True: x += 1  # LEAF",
	"def mid(tag):",
	"    leaf(tag)  # MID",
	"def worker_main():",
	"    mid('worker')  # WORKER",
	"def main():",
	"    t = threading.Thread(target=worker_main, daemon=True)",
	"    t.start()",
	"    while not os.path.exists(os.path.join(OUT, 'worker.ready')):",
	"        pass",
	"    mid('main')  # MAIN",
	"main()  # MODULE",
};
/* clang-format on */

static int marker_line(const char *marker)
{
	size_t i;

	for (i = 0; i < sizeof(workload) / sizeof(workload[0]); i++)
		if (strstr(workload[i], marker))
			return (int)i + 1;
	return -1;
}

/* One expected frame, leaf first: name and the file it must be in
 * (NULL: the workload script); line 0 means "any". */
struct want_frame {
	const char *name;
	const char *file_suffix;
	int line;
};

struct ctx {
	const struct pyinterp *pi;
	struct pyruntime rt;
	struct pycode_cache *cache;
	char script[PATH_MAX + 32];
	pid_t pid;
	uint32_t worker_tid;
	uint64_t tls_off;  /* learnt fs_base - TLS block distance, 0 if not yet */
	uint32_t tls_hits; /* threads whose TLS slot held their tstate */
	char why[512];	   /* last mismatch, for the failure message */
};

static int check_frames(struct ctx *x, const struct pystack_thread *t,
			const struct want_frame *want, uint32_t n)
{
	struct pycode_frame f;
	uint32_t i;

	if (t->nframes != n) {
		snprintf(x->why, sizeof(x->why), "thread %u: %u frames, want %u", t->tid,
			 t->nframes, n);
		return -1;
	}
	for (i = 0; i < n; i++) {
		const char *file = want[i].file_suffix ? want[i].file_suffix : x->script;
		size_t fl, sl;
		int err = pycode_resolve(x->cache, &x->rt, t->frames[i].code_addr,
					 t->frames[i].instr_off, &f);

		if (err) {
			snprintf(x->why, sizeof(x->why), "frame %u: resolve: %d", i, err);
			return -1;
		}
		fl = strlen(f.filename);
		sl = strlen(file);
		if (strcmp(f.qualname, want[i].name) || fl < sl ||
		    strcmp(f.filename + fl - sl, file) ||
		    (want[i].line && f.line != want[i].line)) {
			snprintf(x->why, sizeof(x->why),
				 "thread %u frame %u: %.60s (%.120s:%d), want %.60s (%.120s:%d)",
				 t->tid, i, f.qualname, f.filename, f.line, want[i].name, file,
				 want[i].line);
			return -1;
		}
	}
	return 0;
}

/* Entry marks: every frame on <= 3.10; 3.11+ at least the outermost
 * frame, never the leaf (it is called from Python). */
static int check_entries(struct ctx *x, const struct pystack_thread *t)
{
	uint32_t i, n = t->nframes;

	for (i = 0; i < n; i++) {
		int entry = !!(t->frames[i].flags & PYSTACK_F_ENTRY);
		int want = x->rt.minor <= 10 || i == n - 1;

		if ((want && !entry) || (x->rt.minor >= 11 && i == 0 && entry)) {
			snprintf(x->why, sizeof(x->why), "thread %u frame %u: entry flag %d",
				 t->tid, i, entry);
			return -1;
		}
	}
	return 0;
}

/* tstate->thread_id is pthread_self(): glibc's struct pthread, whose tid
 * field the 3.9/3.10 walk relies on, and the thread pointer under which
 * the static TLS slot _Py_tss_tstate (3.12+) holds the tstate or NULL. */
static int check_thread_ids(struct ctx *x, const struct pystack_thread *t)
{
	uint32_t tid = 0;
	uint64_t slot;

	if (pymem_read_u32(x->pid, t->pthread_id + PYSTACK_GLIBC_PTHREAD_TID, &tid) ||
	    tid != t->tid) {
		snprintf(x->why, sizeof(x->why), "thread %u: struct pthread says tid %u", t->tid,
			 tid);
		return -1;
	}
	if (!x->tls_off)
		return 0;
	if (pymem_read_u64(x->pid, t->pthread_id - x->tls_off + x->rt.tls_tstate_off, &slot) ||
	    (slot && slot != t->tstate)) {
		snprintf(x->why, sizeof(x->why), "thread %u: TLS slot holds %#llx", t->tid,
			 (unsigned long long)slot);
		return -1;
	}
	x->tls_hits += slot == t->tstate;
	return 0;
}

static int check_dump(struct ctx *x, const struct pystack_dump *d)
{
	int q = x->rt.minor >= 11; /* qualnames */
	const struct want_frame main_want[] = {
	    {"leaf", NULL, marker_line("# LEAF")},
	    {"mid", NULL, marker_line("# MID")},
	    {"main", NULL, marker_line("# MAIN")},
	    {"<module>", NULL, marker_line("# MODULE")},
	};
	const struct want_frame worker_want[] = {
	    {"leaf", NULL, marker_line("# LEAF")},
	    {"mid", NULL, marker_line("# MID")},
	    {"worker_main", NULL, marker_line("# WORKER")},
	    {q ? "Thread.run" : "run", "/threading.py", 0},
	    {q ? "Thread._bootstrap_inner" : "_bootstrap_inner", "/threading.py", 0},
	    {q ? "Thread._bootstrap" : "_bootstrap", "/threading.py", 0},
	};
	int seen_main = 0, seen_worker = 0;
	uint32_t i;

	for (i = 0; i < d->nthreads; i++) {
		const struct pystack_thread *t = &d->threads[i];
		int err;

		if (t->tid == (uint32_t)x->pid) {
			err = check_frames(x, t, main_want, 4);
			seen_main++;
		} else if (t->tid == x->worker_tid) {
			err = check_frames(x, t, worker_want, 6);
			seen_worker++;
		} else {
			snprintf(x->why, sizeof(x->why), "unexpected thread tid %u", t->tid);
			return -1;
		}
		if (err || check_entries(x, t) || check_thread_ids(x, t))
			return -1;
	}
	if (seen_main != 1 || seen_worker != 1) {
		snprintf(x->why, sizeof(x->why), "%u threads: main seen %d, worker seen %d",
			 d->nthreads, seen_main, seen_worker);
		return -1;
	}
	return 0;
}

/* 3.12+: learn where _Py_tss_tstate sits; it must not move. */
static void learn_tls(struct ctx *x, const struct pystack_dump *d)
{
	uint64_t off;

	if (x->rt.tls_tstate_off == PYRUNTIME_NO_TLS ||
	    pystack_find_tls_offset(x->pid, &x->rt, d, &off))
		return;
	if (x->tls_off && off != x->tls_off)
		fail_msg("TLS offset moved: %#llx then %#llx", (unsigned long long)x->tls_off,
			 (unsigned long long)off);
	x->tls_off = off;
}

/* A live process is read while it runs: retry until a clean snapshot
 * (and, 3.12+, one where some thread's TLS slot held its tstate). */
static void walk_until_match(struct ctx *x)
{
	int need_tls = x->rt.tls_tstate_off != PYRUNTIME_NO_TLS;
	struct pystack_dump d = {0};
	int tries, ok = 0;

	for (tries = 0; tries < 100; tries++) {
		pystack_dump_free(&d);
		assert_int_equal(pystack_dump(x->pid, &x->rt, &d), 0);
		learn_tls(x, &d);
		ok = !check_dump(x, &d);
		if (ok && (!need_tls || x->tls_hits))
			break;
		pyinterp_sleep_ms(30);
	}
	if (!ok || (need_tls && !x->tls_hits)) {
		pystack_print(stderr, &d, x->cache, &x->rt);
		pystack_dump_free(&d);
		fail_msg("%s: %s%s", x->pi->path, ok ? "" : x->why,
			 ok ? "_Py_tss_tstate never found" : "");
	}
	print_message("  %s: Python %d.%d, %u threads match after %d tries", x->pi->path,
		      x->rt.major, x->rt.minor, d.nthreads, tries + 1);
	if (need_tls)
		print_message(", _Py_tss_tstate at fs_base - %#llx + %#llx",
			      (unsigned long long)x->tls_off,
			      (unsigned long long)x->rt.tls_tstate_off);
	print_message("\n");
	if (getenv("PROFD_TEST_VERBOSE"))
		pystack_print(stderr, &d, x->cache, &x->rt);
	pystack_dump_free(&d);
}

static void read_worker_tid(struct ctx *x, const char *dir)
{
	char path[PATH_MAX + 32];
	unsigned int tid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/worker.ready", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%u", &tid), 1);
	fclose(f);
	x->worker_tid = tid;
}

static void run_one(const struct pyinterp *pi)
{
	struct ctx x = {.pi = pi};
	char dir[PATH_MAX], body[4096] = "", ready[PATH_MAX + 32];
	size_t i;

	for (i = 0; i < sizeof(workload) / sizeof(workload[0]); i++) {
		strcat(body, workload[i]);
		strcat(body, "\n");
	}
	assert_int_equal(pyinterp_scratch("pystack", dir, sizeof(dir)), 0);
	snprintf(x.script, sizeof(x.script), "%s/workload.py", dir);
	assert_int_equal(pyinterp_write(x.script, body), 0);
	x.pid = pyinterp_spawn(pi->path, x.script, dir);
	assert_true(x.pid > 0);
	snprintf(ready, sizeof(ready), "%s/main.ready", dir);
	if (pyinterp_wait_file(ready, 20000)) {
		pyinterp_kill(x.pid);
		fail_msg("%s: workload did not start", pi->path);
	}
	read_worker_tid(&x, dir);
	x.cache = pycode_cache_new();
	assert_non_null(x.cache);
	assert_int_equal(pyruntime_detect(x.pid, &x.rt), 0);
	assert_int_equal(x.rt.minor, pi->minor);
	walk_until_match(&x);
	pyinterp_kill(x.pid);
	pycode_cache_free(x.cache);
}

static void for_version(int minor)
{
	int i, ran = 0;

	for (i = 0; i < interps.n; i++) {
		if (interps.list[i].minor == minor) {
			run_one(&interps.list[i]);
			ran++;
		}
	}
	if (!ran) {
		print_message("  no python3.%d found (PATH, pyenv or PROFD_TEST_PYTHONS)\n", minor);
		skip();
	}
}

#define VERSION_TEST(minor)                                                                        \
	static void test_python3_##minor(void **state)                                             \
	{                                                                                          \
		(void)state;                                                                       \
		for_version(minor);                                                                \
	}
VERSION_TEST(9)
VERSION_TEST(10)
VERSION_TEST(11)
VERSION_TEST(12)
VERSION_TEST(13)

/* Not Python: detection must say so. */
static void test_not_python(void **state)
{
	struct pyruntime rt;

	(void)state;
	assert_int_equal(pyruntime_detect(getpid(), &rt), -ENOENT);
}

static void test_version_from_name(void **state)
{
	int minor = 0;

	(void)state;
	assert_int_equal(pyruntime_version_from_name("/x/libpython3.11.so.1.0", &minor), 0);
	assert_int_equal(minor, 11);
	assert_int_equal(pyruntime_version_from_name("libpython3.9d.so", &minor), 0);
	assert_int_equal(minor, 9);
	assert_int_equal(pyruntime_version_from_name("/usr/bin/python3.10", &minor), 0);
	assert_int_equal(minor, 10);
	assert_int_equal(pyruntime_version_from_name("/usr/bin/python3", &minor), -ENOENT);
	assert_int_equal(pyruntime_version_from_name("python3.x", &minor), -ENOENT);
	assert_int_equal(pyruntime_version_from_name("/usr/bin/bash", &minor), -ENOENT);
}

static int dump_pid(int pid)
{
	struct pycode_cache *c = pycode_cache_new();
	struct pystack_dump d;
	struct pyruntime rt;
	uint64_t tls;
	int err;

	err = pyruntime_detect(pid, &rt);
	if (err || !c) {
		fprintf(stderr, "pid %d: no usable CPython: %s\n", pid, strerror(c ? -err : errno));
		pycode_cache_free(c);
		return 1;
	}
	printf("pid %d: Python %d.%d, %s, _PyRuntime at %#llx\n", pid, rt.major, rt.minor, rt.path,
	       (unsigned long long)rt.runtime_addr);
	err = pystack_dump(pid, &rt, &d);
	pystack_print(stdout, &d, c, &rt);
	if (!pystack_find_tls_offset(pid, &rt, &d, &tls))
		printf("_Py_tss_tstate at fs_base - %#llx + %#llx\n", (unsigned long long)tls,
		       (unsigned long long)rt.tls_tstate_off);
	pystack_dump_free(&d);
	pycode_cache_free(c);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_not_python), cmocka_unit_test(test_version_from_name),
	    cmocka_unit_test(test_python3_9),  cmocka_unit_test(test_python3_10),
	    cmocka_unit_test(test_python3_11), cmocka_unit_test(test_python3_12),
	    cmocka_unit_test(test_python3_13),
	};

	if (argc == 3 && !strcmp(argv[1], "--pid"))
		return dump_pid(atoi(argv[2]));
	if (getenv("PROFD_TEST_VERBOSE"))
		log_set_level(LOG_DEBUG);
	pyinterp_discover(&interps);
	for (int i = 0; i < interps.n; i++)
		print_message("python 3.%d: %s\n", interps.list[i].minor, interps.list[i].path);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
