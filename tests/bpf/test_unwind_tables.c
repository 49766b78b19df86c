/* test_unwind_tables: how the unwinder keeps its tables, with the BPF
 * unwinder walking real processes (the C program of uwtest_workload.h,
 * python3.11): the memory cap and what is refused past it, the least
 * recently sampled process giving way, a process that execs, one gone
 * before its tables are built, and mappings over one chunk of the
 * mapping table (this test re-executes itself with --pause for that).
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
		ok = uw_expect(false, "set up");
		goto out;
	}
	unwinder_stats(u, &st);
	ok &= uw_expect(!strcmp(state_of(u, "/libc.so.6"), "loaded") &&
			 !strcmp(state_of(u, "/uwt"), "loaded") && st.refusals == 0 &&
			 st.table_bytes_used == st.table_bytes_limit,
		     "the program's tables fill the cap exactly");
	if (env->python[0]) {
		b = uw_spawn_cmd(py_argv);
		ok &= uw_expect(b > 0 && unwinder_add_process(u, b) == 0, "python3.11 added");
		unwinder_stats(u, &st);
		ok &= uw_expect(!strcmp(state_of(u, "/python3.11"), "refused") && st.refusals >= 1 &&
				 st.evictions == 0 && st.table_bytes_used <= st.table_bytes_limit,
			     "python3.11's tables refused, nothing evicted, the cap holds");
	}
	ok &=
	    uw_expect(unwinder_remove_process(u, a) == 0 && (b <= 0 || !unwinder_remove_process(u, b)),
		   "processes removed");
	ok &= uw_expect(bpf_map__lookup_elem(skel->maps.unwind_procs, &a, sizeof(a), &v, sizeof(v),
					  0) == -ENOENT,
		     "their BPF entries are gone");
	unwinder_stats(u, &st);
	built = st.tables_built;
	c = uw_spawn_cmd(argv2);
	ok &= uw_expect(c > 0 && unwinder_add_process(u, c) == 0, "the copy added");
	unwinder_stats(u, &st);
	ok &= uw_expect(st.tables_built == built + 1 && st.evictions == 1 &&
			 !strcmp(state_of(u, "/uwt.copy"), "loaded") &&
			 !strcmp(state_of(u, "/uwt"), "absent"),
		     "only the copy's table built (libc reused), the unused one evicted for it");
	ok &= uw_expect(st.table_bytes_used <= st.table_bytes_limit, "the cap holds");
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
		ok = uw_expect(false, "set up");
		goto out;
	}
	usleep(400 * 1000); /* a is not sampled: idle */
	c = uw_spawn_cmd(argv2);
	ok &= uw_expect(c > 0 && unwinder_add_process(u, c) == 0, "the copy added");
	unwinder_stats(u, &st);
	ok &= uw_expect(st.given_way == 1 && st.refusals == 0 && !strcmp(state_of(u, "/uwt"), "gave-way") &&
			 !strcmp(state_of(u, "/uwt.lru"), "loaded"),
		     "the idle program's table gave way to the copy's");
	ok &= uw_expect(unwinder_refresh_process(u, a) == 0, "the first refreshed at once");
	unwinder_stats(u, &st);
	ok &= uw_expect(st.given_way == 1 && !strcmp(state_of(u, "/uwt"), "gave-way"),
		     "the copy's new table does not give way within the idle time");
	before = sampled_epoch_of(skel, a);
	ok &= uw_expect(uw_attach(skel, links, ncpus) == 0, "sampling the first attached");
	sample_for(skel, 500); /* c is not sampled: idle now */
	ok &= uw_expect(before == 0 && sampled_epoch_of(skel, a) == skel->data->unwind_epoch,
		     "its walks mark it sampled in the current epoch");
	ok &= uw_expect(unwinder_refresh_process(u, a) == 0, "the first refreshed once sampled");
	unwinder_stats(u, &st);
	ok &= uw_expect(st.given_way == 2 && st.refusals == 0 && !strcmp(state_of(u, "/uwt"), "loaded") &&
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
		ok = uw_expect(false, "set up");
		goto out;
	}
	usleep(100 * 1000); /* let the loader finish */
	unwinder_counters(u, before);
	sample_for(skel, 500);
	unwinder_counters(u, after);
	ok &= uw_expect(after[PROFD_UNWIND_CNT_STALE] > before[PROFD_UNWIND_CNT_STALE] &&
			 after[PROFD_UNWIND_CNT_CALLS] == before[PROFD_UNWIND_CNT_CALLS],
		     "after exec the old entry is stale and not used");
	ok &= uw_expect(unwinder_refresh_process(u, p.pid) == 0, "refreshed");
	unwinder_counters(u, before);
	sample_for(skel, 500);
	unwinder_counters(u, after);
	ok &= uw_expect(after[PROFD_UNWIND_CNT_STALE] == before[PROFD_UNWIND_CNT_STALE] &&
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
		ok = uw_expect(false, "set up");
		goto out;
	}
	ok &= uw_expect(unwinder_add_process(u, gone) == 0, "the gone process is added");
	ok &= uw_expect(unwinder_add_process(u, live) == 0, "a live one mapping libc too");
	unwinder_for_each_file(u, find_libc, &libc);
	ok &= uw_expect(!strcmp(libc, "loaded"), "libc's table is loaded");
	if (strcmp(libc, "loaded"))
		printf("  libc: %s\n", libc);
out:
	unwinder_free(u);
	unwind_test_bpf__destroy(skel);
	return ok ? 0 : 1;
}

/* ---- mappings over a chunk ---- */

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
		ok = uw_expect(false, "a pad and a process of 4089 mappings started and sampled");
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
	ok &= uw_expect(res.map_count > FILLER_MAPPINGS - 16 &&
			 res.map_start >> PROFD_UNWIND_MAP_CHUNK_SHIFT !=
				 (res.map_start + res.map_count - 1) >> PROFD_UNWIND_MAP_CHUNK_SHIFT &&
			 res.stats.mapping_bytes_allocated >= 2 * MAP_CHUNK_BYTES &&
			 res.stats.mapping_bytes_allocated <= 3 * MAP_CHUNK_BYTES,
		     "its list crosses from one chunk into the next, two or three made");
	ok &= uw_expect(res.nsamples >= UW_MIN_SAMPLES && ok_walks >= UW_PASS_RATE * (double)res.nsamples,
		     "its walks unwind across the boundary");
	if (uw_open(NULL, 0, &skel, &u) || unwinder_add_process(u, pad) ||
	    unwinder_add_process(u, proc.pid)) {
		ok = uw_expect(false, "added to an unwinder of their own");
		goto out;
	}
	unwinder_remove_process(u, proc.pid);
	unwinder_remove_process(u, pad);
	usleep(100 * 1000); /* past the grace period a slice is held back */
	unwinder_note_sampling(u); /* the tick */
	unwinder_stats(u, &st);
	ok &= uw_expect(st.mappings_used == 0 && st.mapping_bytes_allocated == 0 &&
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

/* Whether the machine refuses BPF (a skip, not a failure). */
static bool bpf_refused(void)
{
	struct unwinder_opts o = {.max_mappings = 512, .max_procs = 8, .table_bytes = 1 << 20};
	struct unwind_test_bpf *skel;
	struct unwinder *u;
	int err = uw_open(&o, 0, &skel, &u);

	unwinder_free(u);
	unwind_test_bpf__destroy(skel);
	return err == -EPERM;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--pause")) { /* self_paused_child() */
		if (write(3, "\1", 1) != 1)
			return 1;
		pause();
		return 0;
	}
	struct uw_modules c = {0};
	struct uw_env env;
	int rc = 0, err;

	err = uw_env_init(&env);
	if (err)
		return err == -EPERM ? 77 : 1;
	if (bpf_refused()) {
		printf("SKIP: the machine refuses BPF (EPERM)\n");
		return 77;
	}
	if (uw_build_c(&env, &c))
		return 1;
	rc |= check_limits(&env, c.exe);
	rc |= check_give_way(c.exe);
	rc |= check_exec(c.exe);
	rc |= check_gone_first(&env);
	rc |= check_map_chunks();
	uw_clean_up(&env, rc);
	printf("%s\n", rc ? "FAIL" : "PASS");
	return rc;
}
