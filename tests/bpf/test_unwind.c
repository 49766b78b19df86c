/* test_unwind: the in-kernel .eh_frame unwinder against real processes.
 *
 * 1. A C program built here with -O2 -fomit-frame-pointer: main -> c1 ..
 *    c6 -> libc qsort -> cb_compare -> c8 .. c12 -> a leaf in the program
 *    or, through a dlopen'ed library built the same way, lib_entry ->
 *    lib_a -> lib_b -> lib_spin.  The library is loaded after the unwinder
 *    learnt the process, so unwinder_refresh_process() must pick it up.
 *    >= 95% of samples (and of those with the leaf in the library) must
 *    unwind to main and on to __libc_start_call_main / __libc_start_main,
 *    every frame of ours in the right order.  perf record --call-graph
 *    dwarf samples the same process at the same time; its rate is
 *    reported, not asserted.
 * 2. The distribution's python3.11 (no frame pointers, stripped) running a
 *    pure-Python loop: see judge_python() for what is asserted.
 * 3. Its tables split over two chunks: the walks still unwind.
 * How the tables are kept (the memory cap, eviction, exec, mappings over
 * a chunk) is test_unwind_tables.c's.
 *
 * Needs root; exits 77 only when the machine refuses BPF. */
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uwtest.h"
#include "uwtest_workload.h"


/* Our frames, leaf to root, for the three kinds of leaf (the syscall
 * one has libc's write() below it, and most of its samples hit the
 * kernel: those start from the registers saved at kernel entry). */
static const char *const chain_exe[] = {"spin_exe", "c12", "c11", "c10", "c9", "c8", "cb_compare",
					"c6",	    "c5",  "c4",  "c3",	 "c2", "c1", "main"};
static const char *const chain_lib[] = {"lib_spin", "lib_b", "lib_a", "lib_entry",  "c12", "c11",
					"c10",	    "c9",    "c8",    "cb_compare", "c6",  "c5",
					"c4",	    "c3",    "c2",    "c1",	    "main"};
static const char *const chain_sys[] = {"sys_leaf", "c12", "c11", "c10", "c9", "c8", "cb_compare",
					"c6",	    "c5",  "c4",  "c3",	 "c2", "c1", "main"};

static const char *const python_code = "def leaf(n):\n"
				       "    s = 0\n"
				       "    for i in range(n):\n"
				       "        s += i * i\n"
				       "    return s\n"
				       "def middle(n):\n"
				       "    return leaf(n) + 1\n"
				       "while True:\n"
				       "    middle(20000)\n";

/* ---- the C program ---- */

static bool is_tail_of(const char *const *ours, size_t n, const char *const *chain, size_t len)
{
	size_t k;

	if (!n || n > len)
		return false;
	for (k = 0; k < n; k++)
		if (strcmp(ours[k], chain[len - n + k]))
			return false;
	return true;
}

/* Our frames of one sample (those in the program or the library) must be
 * the tail of one expected chain, and only libc may sit between them
 * (qsort's internals, write()).  Then main is followed by libc's start
 * code and _start. */
static bool check_c_sample(const struct uw_sample *s, const struct uw_modules *mods)
{
	const char *ours[UW_MAX_FRAMES] = {0};
	const struct uw_frame *f = s->frames;
	size_t n = 0, i;

	for (i = 0; i < s->nframes; i++) {
		/* A leaf in a PLT stub (write@plt) has no symbol: the stub's
		 * caller is the next frame. */
		if (i == 0 && f[i].module == UW_MOD_EXE && f[i].name[0] == '[')
			continue;
		if (f[i].module == UW_MOD_EXE || f[i].module == UW_MOD_LIB)
			ours[n++] = f[i].name;
		else if (f[i].module != UW_MOD_LIBC)
			return false; /* ld.so, vdso or unknown inside our chain */
		if (n && !strcmp(ours[n - 1], "main"))
			break;
	}
	if (!is_tail_of(ours, n, chain_exe, UW_ARRAY_SIZE(chain_exe)) &&
	    !is_tail_of(ours, n, chain_lib, UW_ARRAY_SIZE(chain_lib)) &&
	    !is_tail_of(ours, n, chain_sys, UW_ARRAY_SIZE(chain_sys)))
		return false;
	return uw_reaches_libc_start(s, i + 1, mods, UW_MOD_EXE);
}

static int run_c_workload(const struct uw_env *env, struct uw_result *res)
{
	struct uw_proc proc;
	int err = uw_build_c(env, &res->mods);

	if (err)
		return err;
	err = uw_spawn(&proc, res->mods.exe, res->mods.lib, true);
	if (err)
		return err;
	err = uw_profile(env, &proc, res, true);
	uw_kill(&proc);
	return err;
}

struct c_tally {
	size_t n, ok;
};

static void tally(struct c_tally *t, bool good)
{
	t->n++;
	t->ok += good;
}

static void print_tally(const char *what, const struct c_tally *t)
{
	printf("C program, %s: %zu samples, %zu (%.1f%%) unwound to main and __libc_start_main\n",
	       what, t->n, t->ok, t->n ? 100.0 * (double)t->ok / (double)t->n : 0.0);
}

static bool tally_fails(const char *what, const struct c_tally *t, size_t min)
{
	if (t->n < min || (double)t->ok < UW_PASS_RATE * (double)t->n) {
		printf("FAIL: %s: %zu of %zu samples ok (need %zu samples, %.0f%%)\n", what, t->ok,
		       t->n, min, UW_PASS_RATE * 100);
		return true;
	}
	return false;
}

static int judge_c(const struct uw_result *res)
{
	struct c_tally all = {0}, lib = {0}, kern = {0}, fp = {0};
	size_t i, shown = 0;
	bool fail;

	for (i = 0; i < res->nsamples; i++) {
		const struct uw_sample *s = &res->samples[i];
		bool good = check_c_sample(s, &res->mods);

		tally(&all, good);
		if (s->nframes && s->frames[0].module == UW_MOD_LIB)
			tally(&lib, good);
		if (!s->user_mode)
			tally(&kern, good);
		if (!good && shown++ < 5)
			uw_print_sample("C program, failed", s);
		tally(&fp, check_c_sample(&res->fp_samples[i], &res->mods));
	}
	print_tally("all", &all);
	print_tally("leaf in the dlopen'ed library", &lib);
	print_tally("sample in a syscall (user regs from kernel entry)", &kern);
	print_tally("same samples by frame pointers (bpf_get_stack), for comparison", &fp);
	for (i = 0; i < 2; i++) {
		if (res->perf_samples[i] < 0) {
			printf("perf --call-graph %s: not available here (%s)\n", uw_perf_modes[i],
			       res->perf_note);
			continue;
		}
		printf("perf record --call-graph %s, same process, same time: %ld samples, %ld "
		       "(%.1f%%) reached main and __libc_start_*\n",
		       uw_perf_modes[i], res->perf_samples[i], res->perf_ok[i],
		       res->perf_samples[i] ? 100.0 * res->perf_ok[i] / res->perf_samples[i] : 0.0);
	}
	fail = tally_fails("all samples", &all, UW_MIN_SAMPLES);
	fail |= tally_fails("library leaf", &lib, UW_MIN_SAMPLES / 4);
	fail |= tally_fails("syscall samples", &kern, UW_MIN_SAMPLES / 8);
	return fail ? 1 : 0;
}

/* ---- python3.11 ---- */

/* Asserted per sample, leaf to root, by name (CPython's exported
 * symbols; python3.11 is stripped, .dynsym has them):
 *   _PyEval_EvalFrameDefault (the eval loop) ... Py_RunMain ... Py_BytesMain,
 *   then the executable's main: on Debian's build main is just
 *   "jmp Py_BytesMain", so Py_BytesMain is itself the frame that
 *   __libc_start_call_main called; a build where main keeps a frame shows
 *   it (named "main" or unnamed) between the two,
 *   then libc's __libc_start_call_main, __libc_start_main, python's
 *   _start as the last frame, and the walk ended cleanly (CFI marks
 *   _start's return address undefined). */
static bool check_python_sample(const struct uw_sample *s, const struct uw_modules *mods)
{
	size_t i, eval = SIZE_MAX, runmain = SIZE_MAX, bytesmain = SIZE_MAX;

	for (i = 0; i < s->nframes; i++) {
		const char *name = s->frames[i].name;

		if (!strcmp(name, "_PyEval_EvalFrameDefault") && eval == SIZE_MAX)
			eval = i;
		else if (!strcmp(name, "Py_RunMain"))
			runmain = i;
		else if (!strcmp(name, "Py_BytesMain"))
			bytesmain = i;
		else if (s->frames[i].module == UW_MOD_LIBC &&
			 !strcmp(name, "__libc_start_call_main"))
			break;
	}
	if (i >= s->nframes || eval == SIZE_MAX || runmain == SIZE_MAX || bytesmain == SIZE_MAX ||
	    !(eval < runmain && runmain < bytesmain))
		return false;
	if (bytesmain + 2 == i) { /* main kept a frame */
		const struct uw_frame *m = &s->frames[i - 1];

		if (m->module != UW_MOD_EXE || (strcmp(m->name, "main") && m->name[0] != '['))
			return false;
	} else if (bytesmain + 1 != i || s->frames[bytesmain].module != UW_MOD_EXE) {
		return false;
	}
	return uw_reaches_libc_start(s, i, mods, UW_MOD_EXE);
}

static int run_python(const struct uw_env *env, struct uw_result *res)
{
	struct uw_proc proc;
	int err;

	snprintf(res->mods.exe, sizeof(res->mods.exe), "%s", env->python);
	err = uw_spawn(&proc, env->python, python_code, false);
	if (err)
		return err;
	usleep(300 * 1000); /* past interpreter start-up */
	err = uw_profile(env, &proc, res, false);
	uw_kill(&proc);
	return err;
}

static int judge_python(const struct uw_result *res)
{
	size_t i, ok = 0, shown = 0, fp_ok = 0;

	for (i = 0; i < res->nsamples; i++) {
		bool good = check_python_sample(&res->samples[i], &res->mods);

		ok += good;
		fp_ok += check_python_sample(&res->fp_samples[i], &res->mods);
		if (!good && shown++ < 5)
			uw_print_sample("python3.11, failed", &res->samples[i]);
	}
	if (res->nsamples)
		uw_print_sample("python3.11, first sample", &res->samples[0]);
	printf("python3.11: %zu samples, %zu (%.1f%%) unwound _PyEval_EvalFrameDefault -> "
	       "Py_RunMain -> Py_BytesMain -> main -> __libc_start_main -> _start\n",
	       res->nsamples, ok, res->nsamples ? 100.0 * ok / res->nsamples : 0.0);
	printf("python3.11, same samples by frame pointers (bpf_get_stack), for comparison: "
	       "%zu (%.1f%%)\n",
	       fp_ok, res->nsamples ? 100.0 * fp_ok / res->nsamples : 0.0);
	if (res->nsamples < UW_MIN_SAMPLES || ok < UW_PASS_RATE * res->nsamples) {
		printf("FAIL: python3.11 unwind rate below %.0f%% or too few samples\n",
		       UW_PASS_RATE * 100);
		return 1;
	}
	return 0;
}

/* ---- chunks ---- */

#define CHUNK_BYTES ((uint64_t)PROFD_UNWIND_CHUNK_VALUES * sizeof(struct profd_unwind_words))
#define MAX_FILLERS 32

struct file_span {
	const char *path;
	uint64_t first, bytes;
	bool found;
};

static void find_span(void *ctx, const struct unwinder_file_info *fi)
{
	struct file_span *f = ctx;

	if (!strcmp(fi->path, f->path) && !strcmp(fi->state, "loaded")) {
		f->first = fi->first_byte;
		f->bytes = fi->bytes;
		f->found = true;
	}
}

static struct file_span span_of(struct unwinder *u, const char *path)
{
	struct file_span f = {.path = path};

	unwinder_for_each_file(u, find_span, &f);
	return f;
}

static uint64_t allocated(struct unwinder *u)
{
	struct unwinder_stats st;

	unwinder_stats(u, &st);
	return st.table_bytes_allocated;
}

/* Copies of python3.11 (each its own file, so its own table), sleeping,
 * added to u until the next table of that size would not fit in the
 * first chunk.  Their pids in fill; how many, or -1. */
static int fill_first_chunk(const struct uw_env *env, struct unwinder *u, pid_t *fill)
{
	char copy[320], cmd[2 * PATH_MAX];
	int n;

	for (n = 0; n < MAX_FILLERS; n++) {
		char *argv[] = {copy, "-c", "import time; time.sleep(60)", NULL};
		struct file_span f;
		struct unwinder_stats st;

		snprintf(copy, sizeof(copy), "%s/py.%d", env->tmp, n);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", env->python, copy);
		if (system(cmd) || (fill[n] = uw_spawn_cmd(argv)) <= 0 ||
		    unwinder_add_process(u, fill[n]))
			return -1;
		f = span_of(u, copy);
		unwinder_stats(u, &st);
		if (!f.found)
			return -1;
		if (st.table_bytes_used + f.bytes > CHUNK_BYTES)
			return n + 1;
	}
	return -1;
}

static int uses_two_chunks(const struct uw_result *r, const char *python)
{
	size_t i, n = strlen(python);

	for (i = 0; i < r->nfiles; i++)
		if (!strncmp(r->files[i].text, python, n) && r->files[i].text[n] == ' ')
			return r->files[i].first_byte < CHUNK_BYTES &&
			       r->files[i].first_byte + r->files[i].bytes > CHUNK_BYTES;
	return 0;
}

/* The rows' memory comes a chunk (2 MiB) at a time.  Copies of
 * python3.11 fill the first chunk until python3.11's own table cannot
 * fit in it: that table crosses into the second, so its walks read rows
 * on both sides of the boundary, and must unwind as python3.11's always
 * do (judge_python: the same check, the same pass rate).  Two chunks are
 * made, not the 32 of the cap.  With every process gone, the tables
 * expire (keep_unused_ns: 1 s here) and the chunks are dropped: nothing
 * allocated, the slots empty; the next process gets one chunk again. */
static int check_chunks(const struct uw_env *env)
{
	struct unwinder_opts o = {.keep_unused_ns = 1000000000ull};
	pid_t fill[MAX_FILLERS] = {0}, again = -1;
	char *again_argv[] = {(char *)env->python, "-c", "import time; time.sleep(30)", NULL};
	struct unwind_test_bpf *skel = NULL;
	struct uw_result res = {0};
	struct unwinder *u = NULL;
	struct unwinder_stats st;
	struct uw_proc proc;
	int nfill = -1, i, slot = 0, id;
	bool ok = true;

	printf("unwind tables in chunks of %llu KiB:\n", (unsigned long long)CHUNK_BYTES >> 10);
	if (uw_open(&o, 0, &skel, &u) || (nfill = fill_first_chunk(env, u, fill)) < 0) {
		ok = uw_expect(false, "set up");
		goto out;
	}
	unwinder_stats(u, &st);
	ok &= uw_expect(allocated(u) == CHUNK_BYTES,
		     "copies of python3.11 fill one chunk, and one is made");
	printf("    %d copies: %.1f KiB of tables in %llu KiB made, cap %llu KiB\n", nfill,
	       (double)st.table_bytes_used / 1024, (unsigned long long)allocated(u) >> 10,
	       (unsigned long long)st.table_bytes_limit >> 10);
	res.mods = (struct uw_modules){0};
	snprintf(res.mods.exe, sizeof(res.mods.exe), "%s", env->python);
	if (uw_spawn(&proc, env->python, python_code, false)) {
		ok = uw_expect(false, "python3.11 started");
		goto out;
	}
	usleep(300 * 1000);
	if (uw_profile_after(env, &proc, &res, false, fill, (size_t)nfill)) {
		uw_kill(&proc);
		ok = uw_expect(false, "python3.11 sampled after the copies");
		goto out;
	}
	uw_kill(&proc);
	ok &= uw_expect(uses_two_chunks(&res, env->python) &&
			 res.stats.table_bytes_allocated == 2 * CHUNK_BYTES,
		     "python3.11's table crosses from the first chunk into the second, two made");
	ok &= uw_expect(judge_python(&res) == 0, "its walks unwind across the boundary");
	for (i = 0; i < nfill; i++) {
		unwinder_remove_process(u, fill[i]);
		uw_reap(fill[i]);
		fill[i] = 0;
	}
	usleep(1100 * 1000);
	unwinder_note_sampling(u); /* the tick: expiry, then the chunks */
	unwinder_stats(u, &st);
	ok &= uw_expect(st.expired > (uint64_t)nfill && st.table_bytes_used == 0 && allocated(u) == 0 &&
			 bpf_map_lookup_elem(bpf_map__fd(skel->maps.unwind_rows), &slot, &id) &&
			 errno == ENOENT,
		     "all gone: the tables expire, the chunk is dropped, its slot empty");
	again = uw_spawn_cmd(again_argv);
	ok &= uw_expect(again > 0 && unwinder_add_process(u, again) == 0 &&
			 allocated(u) == CHUNK_BYTES && span_of(u, env->python).found,
		     "the next process: its tables loaded, one chunk made again");
out:
	for (i = 0; i < MAX_FILLERS; i++)
		uw_reap(fill[i]);
	uw_reap(again);
	uw_result_free(&res);
	unwinder_free(u);
	unwind_test_bpf__destroy(skel);
	return ok ? 0 : 1;
}

int main(void)
{
	struct uw_result c = {0}, py = {0};
	struct uw_env env;
	int rc = 0, err;

	err = uw_env_init(&env);
	if (err)
		return err == -EPERM ? 77 : 1;
	err = run_c_workload(&env, &c);
	if (err == -EPERM) {
		printf("SKIP: the machine refuses BPF or perf events (EPERM)\n");
		return 77;
	}
	rc |= err ? 1 : judge_c(&c);
	if (env.python[0]) {
		err = run_python(&env, &py);
		rc |= err ? 1 : judge_python(&py);
		rc |= check_chunks(&env);
	} else {
		printf("python3.11 not found: python parts not run\n");
	}
	uw_print_tables(&c, "C program");
	uw_print_tables(&py, "python3.11");
	uw_result_free(&c);
	uw_result_free(&py);
	uw_clean_up(&env, rc);
	printf("%s\n", rc ? "FAIL" : "PASS");
	return rc;
}
