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
 *    pure-Python loop: see check_python() for what is asserted.
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

#include "log.h"
#include "uwtest.h"

#define MIN_SAMPLES 200
#define PASS_RATE 0.95

static const char workload_main[] =
    "#include <dlfcn.h>\n#include <fcntl.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include <string.h>\n#include <unistd.h>\n"
    "#define NI __attribute__((noinline, noclone))\n"
    "#define KEEP __asm__ volatile(\"\" ::: \"memory\")\n"
    "typedef long (*lib_fn)(long);\n"
    "static lib_fn lib_entry;\n"
    "static volatile long sink;\n"
    "static int mode, devnull;\n"
    "NI long sys_leaf(long n) { char b = (char)n; for (int i = 0; i < 50; i++) "
    "if (write(devnull, &b, 1) != 1) abort(); KEEP; return b; }\n"
    "NI long spin_exe(long n) { long s = n; for (long i = 0; i < 20000; i++) s = s * 31 + (i ^ n); "
    "sink = s; return s; }\n"
    "NI long c12(long n) { long r = mode == 1 ? lib_entry(n) : mode == 2 ? sys_leaf(n) : "
    "spin_exe(n); KEEP; return r + 12; }\n"
    "NI long c11(long n) { long r = c12(n); KEEP; return r + 11; }\n"
    "NI long c10(long n) { long r = c11(n); KEEP; return r + 10; }\n"
    "NI long c9(long n) { long r = c10(n); KEEP; return r + 9; }\n"
    "NI long c8(long n) { long r = c9(n); KEEP; return r + 8; }\n"
    "NI int cb_compare(const void *a, const void *b) { long x = *(const long *)a, "
    "y = *(const long *)b; sink += c8(x); KEEP; return (x > y) - (x < y); }\n"
    "NI long c6(long n) { long v[16]; for (int i = 0; i < 16; i++) v[i] = (n * 7 + i * 13) % 17; "
    "qsort(v, 16, sizeof(v[0]), cb_compare); KEEP; return v[0] + 6; }\n"
    /* a frame over 32 KiB (CFA = rsp + 8 * n rows), all of it touched */
    "NI long c5(long n) { char big[40000]; memset(big, (int)n, sizeof(big)); KEEP; "
    "long r = c6(n); KEEP; return r + big[(n * 7) % 40000] + 5; }\n"
    /* alloca plus an over-aligned local: gcc realigns the stack through
     * r10 and keeps the CFA below rbp (DRAP) */
    "NI long c4(long n) { __attribute__((aligned(64))) volatile char a[64]; "
    "volatile char *p = __builtin_alloca((n & 15) + 1); p[0] = 1; a[n & 63] = 2; "
    "long r = c5(n); KEEP; return r + a[3] + p[0] + 4; }\n"
    "NI long c3(long n) { long r = c4(n); KEEP; return r + 3; }\n"
    "NI long c2(long n) { long r = c3(n); KEEP; return r + 2; }\n"
    "NI long c1(long n) { long r = c2(n); KEEP; return r + 1; }\n"
    "int main(int argc, char **argv) {\n"
    "	char c;\n"
    "	if (argc > 1) {\n"
    "		if (read(0, &c, 1) != 1) return 1;\n"
    "		void *h = dlopen(argv[1], RTLD_NOW);\n"
    "		if (!h) { fprintf(stderr, \"%s\\n\", dlerror()); return 1; }\n"
    "		lib_entry = (lib_fn)dlsym(h, \"lib_entry\");\n"
    "	}\n"
    "	printf(\"ready\\n\"); fflush(stdout);\n"
    "	devnull = open(\"/dev/null\", O_WRONLY);\n"
    "	for (long i = 0;; i++) { mode = i % 3; if (mode == 1 && !lib_entry) mode = 0; "
    "sink += c1(i); }\n"
    "}\n";

static const char workload_lib[] =
    "#define NI __attribute__((noinline, noclone))\n"
    "#define KEEP __asm__ volatile(\"\" ::: \"memory\")\n"
    "static volatile long sink;\n"
    "NI static long lib_spin(long n) { long s = n; for (long i = 0; i < 20000; i++) "
    "s = s * 37 + (i ^ n); sink = s; return s; }\n"
    "NI static long lib_b(long n) { long r = lib_spin(n); KEEP; return r + 2; }\n"
    "NI static long lib_a(long n) { long r = lib_b(n); KEEP; return r + 3; }\n"
    "long lib_entry(long n) { long r = lib_a(n); KEEP; return r + 4; }\n";

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
	char exe[PATH_MAX], lib[PATH_MAX], cmd[3 * PATH_MAX];
	struct uw_proc proc;
	int err;

	if (uw_write_file(env->tmp, "uwt_main.c", workload_main) ||
	    uw_write_file(env->tmp, "uwt_lib.c", workload_lib))
		return -EIO;
	snprintf(exe, sizeof(exe), "%s/uwt", env->tmp);
	snprintf(lib, sizeof(lib), "%s/libuwt.so", env->tmp);
	snprintf(cmd, sizeof(cmd),
		 "%s -O2 -fomit-frame-pointer -fPIC -shared -o %s %s/uwt_lib.c && "
		 "%s -O2 -fomit-frame-pointer -o %s %s/uwt_main.c -ldl",
		 env->cc, lib, env->tmp, env->cc, exe, env->tmp);
	if (system(cmd) != 0) {
		fprintf(stderr, "test_unwind: cannot build the workload: %s\n", cmd);
		return -EIO;
	}
	if (!realpath(exe, res->mods.exe) || !realpath(lib, res->mods.lib))
		return -errno;
	err = uw_spawn(&proc, exe, lib, true);
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
	if (t->n < min || (double)t->ok < PASS_RATE * (double)t->n) {
		printf("FAIL: %s: %zu of %zu samples ok (need %zu samples, %.0f%%)\n", what, t->ok,
		       t->n, min, PASS_RATE * 100);
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
	fail = tally_fails("all samples", &all, MIN_SAMPLES);
	fail |= tally_fails("library leaf", &lib, MIN_SAMPLES / 4);
	fail |= tally_fails("syscall samples", &kern, MIN_SAMPLES / 8);
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
	if (res->nsamples < MIN_SAMPLES || ok < PASS_RATE * res->nsamples) {
		printf("FAIL: python3.11 unwind rate below %.0f%% or too few samples\n",
		       PASS_RATE * 100);
		return 1;
	}
	return 0;
}

/* ---- the memory cap ---- */

struct file_probe {
	const char *suffix;
	const char *state;
};

static void find_state(void *ctx, const struct unwinder_file_info *fi)
{
	struct file_probe *p = ctx;
	size_t n = strlen(fi->path), m = strlen(p->suffix);

	if (n >= m && !strcmp(fi->path + n - m, p->suffix))
		p->state = fi->state;
}

static void print_file(void *ctx, const struct unwinder_file_info *fi)
{
	(void)ctx;
	printf("    %-56s %-8s %6u rows, %u mappings\n", fi->path, fi->state, fi->rows, fi->refs);
}

static const char *state_of(struct unwinder *u, const char *suffix)
{
	struct file_probe p = {suffix, "absent"};

	unwinder_for_each_file(u, find_state, &p);
	return p.state;
}

static bool expect(bool ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	return ok;
}

static uint64_t table_bytes_of_process(pid_t pid)
{
	struct unwind_test_bpf *skel = NULL;
	struct unwinder *u = NULL;
	struct unwinder_stats st = {0};

	if (!uw_open(NULL, 0, &skel, &u) && !unwinder_add_process(u, pid))
		unwinder_stats(u, &st);
	unwinder_free(u);
	unwind_test_bpf__destroy(skel);
	return st.table_bytes_used;
}

/* A cap exactly as large as the tables of one process of the C program
 * (its own, libc, ld.so, vdso).  python3.11's tables cannot fit while it
 * runs: refused, nothing evicted, the cap holds.  Once both are gone
 * their tables stay cached; a second copy of the program (another file,
 * same size) then reuses libc, ld.so and the vdso and evicts exactly the
 * first copy's unused table to load its own. */
static int check_limits(const struct uw_env *env, const char *exe)
{
	char copy[PATH_MAX + 8], cmd[2 * PATH_MAX + 16];
	char *argv1[] = {(char *)exe, NULL}, *argv2[] = {copy, NULL};
	char *py_argv[] = {(char *)env->python, "-c", "import time; time.sleep(30)", NULL};
	pid_t a = uw_spawn_cmd(argv1), b = -1, c = -1;
	struct unwinder_opts o = {.max_mappings = 512, .max_procs = 8};
	struct unwind_test_bpf *skel = NULL;
	struct unwinder_stats st;
	struct unwinder *u = NULL;
	struct profd_unwind_proc v;
	uint64_t built;
	bool ok = true;

	snprintf(copy, sizeof(copy), "%s.copy", exe);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", exe, copy);
	o.table_bytes = a > 0 ? table_bytes_of_process(a) : 0;
	printf("memory cap of %llu KiB (one C program's tables):\n",
	       (unsigned long long)o.table_bytes >> 10);
	if (!o.table_bytes || system(cmd) || uw_open(&o, 0, &skel, &u) ||
	    unwinder_add_process(u, a)) {
		ok = expect(false, "set up");
		goto out;
	}
	unwinder_stats(u, &st);
	ok &= expect(!strcmp(state_of(u, "/libc.so.6"), "loaded") &&
			 !strcmp(state_of(u, "/uwt"), "loaded") && st.refusals == 0 &&
			 st.table_bytes_used == st.table_bytes_limit,
		     "the program's tables fill the cap exactly");
	if (env->python[0]) {
		b = uw_spawn_cmd(py_argv);
		ok &= expect(b > 0 && unwinder_add_process(u, b) == 0, "python3.11 added");
		unwinder_stats(u, &st);
		ok &= expect(!strcmp(state_of(u, "/python3.11"), "refused") && st.refusals >= 1 &&
				 st.evictions == 0 && st.table_bytes_used <= st.table_bytes_limit,
			     "python3.11's tables refused, nothing evicted, the cap holds");
	}
	ok &=
	    expect(unwinder_remove_process(u, a) == 0 && (b <= 0 || !unwinder_remove_process(u, b)),
		   "processes removed");
	ok &= expect(bpf_map__lookup_elem(skel->maps.unwind_procs, &a, sizeof(a), &v, sizeof(v),
					  0) == -ENOENT,
		     "their BPF entries are gone");
	unwinder_stats(u, &st);
	built = st.tables_built;
	c = uw_spawn_cmd(argv2);
	ok &= expect(c > 0 && unwinder_add_process(u, c) == 0, "the copy added");
	unwinder_stats(u, &st);
	ok &= expect(st.tables_built == built + 1 && st.evictions == 1 &&
			 !strcmp(state_of(u, "/uwt.copy"), "loaded") &&
			 !strcmp(state_of(u, "/uwt"), "absent"),
		     "only the copy's table built (libc reused), the unused one evicted for it");
	ok &= expect(st.table_bytes_used <= st.table_bytes_limit, "the cap holds");
	unwinder_for_each_file(u, print_file, NULL);
	printf(
	    "  %u files, %llu rows (%.1f of %.1f KiB), %llu built, %llu evictions, %llu refusals\n",
	    st.files, (unsigned long long)st.rows_loaded, (double)st.table_bytes_used / 1024,
	    (double)st.table_bytes_limit / 1024, (unsigned long long)st.tables_built,
	    (unsigned long long)st.evictions, (unsigned long long)st.refusals);
out:
	uw_reap(a);
	uw_reap(b);
	uw_reap(c);
	unwinder_free(u);
	unwind_test_bpf__destroy(skel);
	return ok ? 0 : 1;
}

/* ---- least recently sampled ---- */

/* Sample for ms of wall time (a poll returns as soon as events come). */
static void sample_for(struct unwind_test_bpf *skel, int ms)
{
	struct ring_buffer *rb =
	    ring_buffer__new(bpf_map__fd(skel->maps.unwind_events), uw_drop_event, NULL, NULL);
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (rb)
			ring_buffer__poll(rb, 50);
		else
			usleep(50 * 1000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	ring_buffer__free(rb);
}

static uint64_t sampled_epoch_of(struct unwind_test_bpf *skel, pid_t pid)
{
	struct profd_unwind_proc v = {0};

	bpf_map__lookup_elem(skel->maps.unwind_procs, &pid, sizeof(pid), &v, sizeof(v), 0);
	return v.sampled_epoch;
}

/* The cap holds one C program's tables; a second copy of the program runs
 * beside it.  The first, not sampled, gives its own table way to the
 * copy's; sampled again, it asks for it back (its walks are flagged) and
 * the copy, idle by then, gives way in turn.  Nothing is refused, nothing
 * thrashes within the idle time, the cap holds. */
static int check_give_way(const char *exe)
{
	char copy[PATH_MAX + 8], cmd[2 * PATH_MAX + 16];
	char *argv1[] = {(char *)exe, NULL}, *argv2[] = {copy, NULL};
	pid_t a = uw_spawn_cmd(argv1), c = -1;
	struct unwinder_opts o = {.max_mappings = 512, .max_procs = 8, .idle_ns = 300000000ull};
	struct bpf_link *links[1024] = {0};
	int ncpus = libbpf_num_possible_cpus(), i;
	struct unwind_test_bpf *skel = NULL;
	struct unwinder *u = NULL;
	struct unwinder_stats st;
	uint64_t before;
	bool ok = true;

	printf("least recently sampled:\n");
	snprintf(copy, sizeof(copy), "%s.lru", exe);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", exe, copy);
	o.table_bytes = a > 0 ? table_bytes_of_process(a) : 0;
	if (!o.table_bytes || system(cmd) || ncpus > 1024 || uw_open(&o, (uint32_t)a, &skel, &u) ||
	    unwinder_add_process(u, a)) {
		ok = expect(false, "set up");
		goto out;
	}
	usleep(400 * 1000); /* a is not sampled: idle */
	c = uw_spawn_cmd(argv2);
	ok &= expect(c > 0 && unwinder_add_process(u, c) == 0, "the copy added");
	unwinder_stats(u, &st);
	ok &= expect(st.given_way == 1 && st.refusals == 0 && !strcmp(state_of(u, "/uwt"), "gave-way") &&
			 !strcmp(state_of(u, "/uwt.lru"), "loaded"),
		     "the idle program's table gave way to the copy's");
	ok &= expect(unwinder_refresh_process(u, a) == 0, "the first refreshed at once");
	unwinder_stats(u, &st);
	ok &= expect(st.given_way == 1 && !strcmp(state_of(u, "/uwt"), "gave-way"),
		     "the copy's new table does not give way within the idle time");
	before = sampled_epoch_of(skel, a);
	ok &= expect(uw_attach(skel, links, ncpus) == 0, "sampling the first attached");
	sample_for(skel, 500); /* c is not sampled: idle now */
	ok &= expect(before == 0 && sampled_epoch_of(skel, a) == skel->data->unwind_epoch,
		     "its walks mark it sampled in the current epoch");
	ok &= expect(unwinder_refresh_process(u, a) == 0, "the first refreshed once sampled");
	unwinder_stats(u, &st);
	ok &= expect(st.given_way == 2 && st.refusals == 0 && !strcmp(state_of(u, "/uwt"), "loaded") &&
			 !strcmp(state_of(u, "/uwt.lru"), "gave-way") &&
			 st.table_bytes_used <= st.table_bytes_limit,
		     "its table is back, the idle copy's gave way, the cap holds");
	unwinder_for_each_file(u, print_file, NULL);
	printf("  %llu given way, %llu refusals, %.1f of %.1f KiB\n",
	       (unsigned long long)st.given_way, (unsigned long long)st.refusals,
	       (double)st.table_bytes_used / 1024, (double)st.table_bytes_limit / 1024);
out:
	for (i = 0; i < ncpus && i < 1024; i++)
		bpf_link__destroy(links[i]);
	uw_reap(a);
	uw_reap(c);
	unwinder_free(u);
	unwind_test_bpf__destroy(skel);
	return ok ? 0 : 1;
}

/* ---- exec ---- */

/* A shell that exec's the C program after it was added: the walks must
 * see the entry is stale (and not unwind the new image with the shell's
 * mappings) until the process is refreshed, and complete afterwards. */
static int check_exec(const char *exe)
{
	char script[PATH_MAX + 32];
	struct bpf_link *links[1024] = {0};
	struct unwind_test_bpf *skel = NULL;
	uint64_t before[PROFD_UNWIND_CNT_MAX], after[PROFD_UNWIND_CNT_MAX];
	int ncpus = libbpf_num_possible_cpus(), i;
	struct unwinder *u = NULL;
	struct uw_proc p;
	bool ok = true;

	printf("exec:\n");
	snprintf(script, sizeof(script), "read x; exec '%s'", exe);
	if (!uw_spawn(&p, "/bin/sh", script, false))
		for (i = 0; i < 200 && !uw_maps_libc(p.pid); i++)
			usleep(10 * 1000); /* the shell is up */
	if (p.pid <= 0 || uw_open(NULL, (uint32_t)p.pid, &skel, &u) ||
	    unwinder_add_process(u, p.pid) || ncpus > 1024 || uw_attach(skel, links, ncpus) ||
	    write(p.in_fd, "\n", 1) != 1) {
		ok = expect(false, "set up");
		goto out;
	}
	usleep(100 * 1000); /* let the loader finish */
	unwinder_counters(u, before);
	sample_for(skel, 500);
	unwinder_counters(u, after);
	ok &= expect(after[PROFD_UNWIND_CNT_STALE] > before[PROFD_UNWIND_CNT_STALE] &&
			 after[PROFD_UNWIND_CNT_CALLS] == before[PROFD_UNWIND_CNT_CALLS],
		     "after exec the old entry is stale and not used");
	ok &= expect(unwinder_refresh_process(u, p.pid) == 0, "refreshed");
	unwinder_counters(u, before);
	sample_for(skel, 500);
	unwinder_counters(u, after);
	ok &= expect(after[PROFD_UNWIND_CNT_STALE] == before[PROFD_UNWIND_CNT_STALE] &&
			 after[PROFD_UNWIND_CNT_COMPLETE] > before[PROFD_UNWIND_CNT_COMPLETE] &&
			 after[PROFD_UNWIND_CNT_COMPLETE] - before[PROFD_UNWIND_CNT_COMPLETE] ==
			     after[PROFD_UNWIND_CNT_CALLS] - before[PROFD_UNWIND_CNT_CALLS],
		     "then every walk completes");
out:
	for (i = 0; i < ncpus && i < 1024; i++)
		bpf_link__destroy(links[i]);
	uw_kill(&p);
	unwinder_free(u);
	unwind_test_bpf__destroy(skel);
	return ok ? 0 : 1;
}

static void find_libc(void *ctx, const struct unwinder_file_info *fi)
{
	const char **state = ctx;

	if (strstr(fi->path, "/libc.so"))
		*state = fi->state;
}

/* A process whose maps were read but which exited before its files were
 * opened (an exec storm, profctl itself at start-up) must not leave libc
 * "failed" for every other process.  A fake proc root holds two copies of
 * our own maps: "gone" has nothing to open the files through, "live" has
 * its root; neither has map_files, so both name libc by the same key. */
static int check_gone_first(const struct uw_env *env)
{
	const int gone = 0x3ffffff0, live = 0x3ffffff1; /* above any pid_max */
	struct unwinder_opts o = {0};
	struct unwind_test_bpf *skel = NULL;
	struct unwinder *u = NULL;
	const char *libc = "none";
	char root[300], cmd[2048];
	bool ok = true;

	printf("a process gone before its files were opened:\n");
	snprintf(root, sizeof(root), "%s/fakeproc", env->tmp);
	snprintf(cmd, sizeof(cmd),
		 "for p in %d %d; do mkdir -p %s/$p && cp /proc/%d/maps /proc/%d/stat %s/$p/ || "
		 "exit 1; done && ln -sfn / %s/%d/root",
		 gone, live, root, (int)getpid(), (int)getpid(), root, root, live);
	o.proc_root = root;
	if (system(cmd) != 0 || uw_open(&o, 0, &skel, &u)) {
		ok = expect(false, "set up");
		goto out;
	}
	ok &= expect(unwinder_add_process(u, gone) == 0, "the gone process is added");
	ok &= expect(unwinder_add_process(u, live) == 0, "a live one mapping libc too");
	unwinder_for_each_file(u, find_libc, &libc);
	ok &= expect(!strcmp(libc, "loaded"), "libc's table is loaded");
	if (strcmp(libc, "loaded"))
		printf("  libc: %s\n", libc);
out:
	unwinder_free(u);
	unwind_test_bpf__destroy(skel);
	return ok ? 0 : 1;
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
		ok = expect(false, "set up");
		goto out;
	}
	unwinder_stats(u, &st);
	ok &= expect(allocated(u) == CHUNK_BYTES,
		     "copies of python3.11 fill one chunk, and one is made");
	printf("    %d copies: %.1f KiB of tables in %llu KiB made, cap %llu KiB\n", nfill,
	       (double)st.table_bytes_used / 1024, (unsigned long long)allocated(u) >> 10,
	       (unsigned long long)st.table_bytes_limit >> 10);
	res.mods = (struct uw_modules){0};
	snprintf(res.mods.exe, sizeof(res.mods.exe), "%s", env->python);
	if (uw_spawn(&proc, env->python, python_code, false)) {
		ok = expect(false, "python3.11 started");
		goto out;
	}
	usleep(300 * 1000);
	if (uw_profile_after(env, &proc, &res, false, fill, (size_t)nfill)) {
		uw_kill(&proc);
		ok = expect(false, "python3.11 sampled after the copies");
		goto out;
	}
	uw_kill(&proc);
	ok &= expect(uses_two_chunks(&res, env->python) &&
			 res.stats.table_bytes_allocated == 2 * CHUNK_BYTES,
		     "python3.11's table crosses from the first chunk into the second, two made");
	ok &= expect(judge_python(&res) == 0, "its walks unwind across the boundary");
	for (i = 0; i < nfill; i++) {
		unwinder_remove_process(u, fill[i]);
		uw_reap(fill[i]);
		fill[i] = 0;
	}
	usleep(1100 * 1000);
	unwinder_note_sampling(u); /* the tick: expiry, then the chunks */
	unwinder_stats(u, &st);
	ok &= expect(st.expired > (uint64_t)nfill && st.table_bytes_used == 0 && allocated(u) == 0 &&
			 bpf_map_lookup_elem(bpf_map__fd(skel->maps.unwind_rows), &slot, &id) &&
			 errno == ENOENT,
		     "all gone: the tables expire, the chunk is dropped, its slot empty");
	again = uw_spawn_cmd(again_argv);
	ok &= expect(again > 0 && unwinder_add_process(u, again) == 0 &&
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

#define MAP_CHUNK_BYTES ((uint64_t)PROFD_UNWIND_MAP_CHUNK_VALUES * sizeof(struct profd_unwind_mapping))
#define FILLER_MAPPINGS ((int)PROFD_UNWIND_MAP_CHUNK_VALUES - 6)

static int exec_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], perms[8];
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += sscanf(line, "%*s %7s", perms) == 1 && perms[2] == 'x';
	if (f)
		fclose(f);
	return n;
}

/* Where the filler spends its time: a walk from here must reach main,
 * libc's start code and _start. */
static __attribute__((noinline)) void filler_spin(void)
{
	volatile unsigned long x = 0;

	for (;;)
		x++;
}

/* Fork; the child runs child(fd) and says it is ready by writing a
 * nonzero byte to fd.  Its pid once it has, or -1. */
static pid_t fork_ready(void (*child)(int fd))
{
	int p[2];
	char c = 0;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(p[1]);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &c, 1) != 1 || !c) {
		uw_reap(pid);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

/* FILLER_MAPPINGS executable mappings, the first page of this program
 * mapped again and again (never merged: each maps offset 0), then spin. */
static void many_mappings_child(int ready)
{
	int fd = open("/proc/self/exe", O_RDONLY), n;
	char c;

	for (n = exec_mappings(); fd >= 0 && n < FILLER_MAPPINGS; n++)
		if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED)
			_exit(1);
	c = exec_mappings() >= FILLER_MAPPINGS;
	if (write(ready, &c, 1) != 1)
		_exit(1);
	filler_spin();
}

/* This program again, exec'ed (its files, at addresses of its own),
 * paused: main() says it is ready on fd 3. */
static void self_paused_child(int ready)
{
	dup2(ready, 3);
	execl("/proc/self/exe", "test_unwind", "--pause", (char *)NULL);
}

static bool filler_sample_ok(const struct uw_sample *s, const struct uw_modules *mods)
{
	size_t n = s->nframes;

	return n >= 5 && !strcmp(s->frames[0].name, "filler_spin") &&
	       !strcmp(s->frames[n - 4].name, "main") &&
	       uw_reaches_libc_start(s, n - 3, mods, UW_MOD_EXE);
}

/* The mappings' memory comes a chunk (4096, 192 KiB) at a time too.  A
 * process with 4089 executable mappings is published after this program
 * exec'ed again with its usual dozen (the pad: it takes the first slots,
 * at addresses of its own, and has the files' tables built), so the
 * filler's list starts past slot 8 whether the pad's was published once
 * or twice, and lies across a chunk's end (its program at the low end,
 * libc at the high end): a walk from its code to libc's start code reads
 * both chunks, and every walk must get there.  Two or three chunks are
 * made, not the 16 of the cap; with the processes gone, all are dropped
 * and their slots empty. */
static int check_map_chunks(void)
{
	struct unwind_test_bpf *skel = NULL;
	struct uw_result res = {0};
	struct unwinder *u = NULL;
	struct unwinder_stats st;
	pid_t pad = fork_ready(self_paused_child);
	struct uw_proc proc = {.pid = fork_ready(many_mappings_child), .in_fd = -1, .out_fd = -1};
	size_t i, ok_walks = 0;
	int slot = 0, id;
	bool ok = true;

	printf("mappings in chunks of %llu KiB:\n", (unsigned long long)MAP_CHUNK_BYTES >> 10);
	if (pad <= 0 || proc.pid <= 0 ||
	    readlink("/proc/self/exe", res.mods.exe, sizeof(res.mods.exe) - 1) < 0 ||
	    uw_profile_after(NULL, &proc, &res, false, &pad, 1)) {
		ok = expect(false, "a pad and a process of 4089 mappings started and sampled");
		goto out;
	}
	for (i = 0; i < res.nsamples; i++)
		ok_walks += filler_sample_ok(&res.samples[i], &res.mods);
	printf("    its list: mappings %u-%u; %llu KiB made; %zu samples, %zu (%.1f%%) unwound "
	       "filler_spin -> main -> __libc_start_main -> _start\n",
	       res.map_start, res.map_start + res.map_count - 1,
	       (unsigned long long)res.stats.mapping_bytes_allocated >> 10, res.nsamples, ok_walks,
	       res.nsamples ? 100.0 * (double)ok_walks / (double)res.nsamples : 0.0);
	if (res.nsamples && !filler_sample_ok(&res.samples[0], &res.mods))
		uw_print_sample("first sample", &res.samples[0]);
	ok &= expect(res.map_count > FILLER_MAPPINGS - 16 &&
			 res.map_start >> PROFD_UNWIND_MAP_CHUNK_SHIFT !=
				 (res.map_start + res.map_count - 1) >> PROFD_UNWIND_MAP_CHUNK_SHIFT &&
			 res.stats.mapping_bytes_allocated >= 2 * MAP_CHUNK_BYTES &&
			 res.stats.mapping_bytes_allocated <= 3 * MAP_CHUNK_BYTES,
		     "its list crosses from one chunk into the next, two or three made");
	ok &= expect(res.nsamples >= MIN_SAMPLES && ok_walks >= PASS_RATE * (double)res.nsamples,
		     "its walks unwind across the boundary");
	if (uw_open(NULL, 0, &skel, &u) || unwinder_add_process(u, pad) ||
	    unwinder_add_process(u, proc.pid)) {
		ok = expect(false, "added to an unwinder of their own");
		goto out;
	}
	unwinder_remove_process(u, proc.pid);
	unwinder_remove_process(u, pad);
	usleep(100 * 1000); /* past the grace period a slice is held back */
	unwinder_note_sampling(u); /* the tick */
	unwinder_stats(u, &st);
	ok &= expect(st.mappings_used == 0 && st.mapping_bytes_allocated == 0 &&
			 bpf_map_lookup_elem(bpf_map__fd(skel->maps.unwind_mappings), &slot, &id) &&
			 errno == ENOENT,
		     "gone: the chunks are dropped, their slots empty");
out:
	uw_reap(pad);
	uw_reap(proc.pid);
	uw_result_free(&res);
	unwinder_free(u);
	unwind_test_bpf__destroy(skel);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--pause")) { /* self_paused_child() */
		if (write(3, "\1", 1) != 1)
			return 1;
		pause();
		return 0;
	}
	struct uw_result c = {0}, py = {0};
	struct uw_env env;
	int rc = 0, err;

	log_set_level(getenv("PROFD_TEST_VERBOSE") ? LOG_DEBUG : LOG_WARN);
	log_route_libbpf();
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
	} else {
		printf("python3.11 not found: python part not run\n");
	}
	if (c.mods.exe[0]) {
		rc |= check_limits(&env, c.mods.exe);
		rc |= check_give_way(c.mods.exe);
		rc |= check_exec(c.mods.exe);
	}
	rc |= check_gone_first(&env);
	if (env.python[0])
		rc |= check_chunks(&env);
	rc |= check_map_chunks();
	uw_print_tables(&c, "C program");
	uw_print_tables(&py, "python3.11");
	uw_result_free(&c);
	uw_result_free(&py);
	if (!rc) { /* keep the programs and perf data of a failure for a look */
		char cmd[sizeof(env.tmp) + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", env.tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "test_unwind: cannot remove %s\n", env.tmp);
	}
	printf("%s\n", rc ? "FAIL" : "PASS");
	return rc;
}
