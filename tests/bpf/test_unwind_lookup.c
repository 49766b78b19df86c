/* test_unwind_lookup: the BPF table lookup (unwind_lookup_rule() in
 * bpf/unwind.bpf.h, run through BPF_PROG_TEST_RUN) against the built
 * rows, for every file of a real process as the unwinder loaded it into
 * the BPF maps: packing, placement in the shared map, the mapping's word
 * indexes and the page-then-row search all have to agree with a plain
 * binary search over the rows libdw gave.  The process is a PyTorch one
 * when python3-torch is installed (libtorch_cpu: 1.4 million rows, the
 * largest table we know), else python3.11.  Also prints the table memory
 * the process needs.
 *
 * Needs root; exits 77 only when the machine refuses BPF. */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rootfs.h"
#include "unwind_table.h"
#include "uwtest.h"

#define TORCH_LIB "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so"
/* Rows checked per file at most (start and last byte of each), spread
 * evenly; page boundaries are always checked. */
#define MAX_ROWS_PER_FILE 20000

struct lookup_ctx {
	struct unwind_test_bpf *skel;
	int prog_fd;
	uint64_t queries, mismatches, cache_hits;
};

/* The process stopped itself (state T): its import is over, every file
 * it will map is mapped. */
static bool stopped(pid_t pid)
{
	char path[64], line[512], *close_paren;
	bool is_stopped = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f && fgets(line, sizeof(line), f) && (close_paren = strrchr(line, ')')))
		is_stopped = close_paren[1] == ' ' && close_paren[2] == 'T';
	if (f)
		fclose(f);
	return is_stopped;
}

static int bpf_lookup(struct lookup_ctx *c, uint32_t mapping, uint32_t tpc,
		      struct profd_unwind_lookup_test *a)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = a, .ctx_size_in = sizeof(*a));

	*a = (struct profd_unwind_lookup_test){.mapping = mapping, .tpc = tpc};
	return bpf_prog_test_run_opts(c->prog_fd, &opts);
}

static bool same_rule(const struct profd_unwind_lookup_test *a, const struct profd_unwind_row *want)
{
	/* No rule past the last page: the GAP row's answer, as for the walk. */
	if (a->rc)
		return !want || want->cfa_type == PROFD_UNWIND_CFA_GAP;
	return want && a->rule.cfa_type == want->cfa_type && a->rule.cfa_off == want->cfa_off &&
	       a->rule.rbp_off == want->rbp_off && a->rule.ra_off == want->ra_off;
}

/* One pc: the BPF answer against the built rows', twice: the second
 * comes from this CPU's rule cache (the test runs pinned to one CPU). */
static void check_pc(struct lookup_ctx *c, uint32_t mapping, const struct unwind_table *t,
		     uint64_t tpc)
{
	const struct profd_unwind_row *want = unwind_table_lookup(t, t->pc_base + tpc);
	struct profd_unwind_lookup_test a;
	int pass;

	if (tpc > UINT32_MAX)
		return;
	for (pass = 0; pass < 2; pass++) {
		c->queries++;
		if (bpf_lookup(c, mapping, (uint32_t)tpc, &a)) {
			c->mismatches++;
			return;
		}
		c->cache_hits += a.cache_hit;
		if (!same_rule(&a, want) && c->mismatches++ < 5)
			printf("  mismatch at row pc %#llx (%s): bpf rc %d %s%+d, rows %s%+d\n",
			       (unsigned long long)tpc, a.cache_hit ? "cached" : "searched", a.rc,
			       unwind_cfa_name(a.rule.cfa_type), a.rule.cfa_off,
			       want ? unwind_cfa_name(want->cfa_type) : "none", want ? want->cfa_off : 0);
	}
}

static void check_table(struct lookup_ctx *c, uint32_t mapping, const struct unwind_table *t)
{
	size_t i, stride = t->nrows / MAX_ROWS_PER_FILE + 1;
	uint64_t page, last = t->rows[t->nrows - 1].pc;

	for (i = 0; i < t->nrows; i += stride) {
		uint64_t pc = t->rows[i].pc;
		uint64_t end = i + 1 < t->nrows ? t->rows[i + 1].pc : pc + 1;

		check_pc(c, mapping, t, pc);
		check_pc(c, mapping, t, end - 1);
	}
	for (page = 1ull << PROFD_UNWIND_PAGE_BITS; page <= last + (1u << PROFD_UNWIND_PAGE_BITS);
	     page += 1ull << PROFD_UNWIND_PAGE_BITS) {
		check_pc(c, mapping, t, page - 1);
		check_pc(c, mapping, t, page);
	}
}

/* The mapping's file rebuilt here, as the unwinder built it. */
static int build_for(pid_t pid, const struct procmaps *pm, uint64_t start, struct unwind_table *t,
		     const char **path)
{
	size_t i;

	for (i = 0; i < pm->n; i++) {
		int fd, err;

		if (pm->maps[i].start != start)
			continue;
		*path = pm->maps[i].path;
		fd = procfile_open_mapped("/proc", pid, &pm->maps[i]);
		if (fd < 0)
			return fd;
		err = unwind_table_build_fd(fd, NULL, t);
		close(fd);
		return err;
	}
	return -ENOENT;
}

/* Mapping idx of unwind_mappings, read through its chunk as the BPF side
 * reads it (profd_abi_unwind.h): 0, or -1 when the chunk is not made. */
static int mapping_read(struct lookup_ctx *c, uint32_t idx, struct profd_unwind_mapping *m)
{
	uint32_t chunk = idx >> PROFD_UNWIND_MAP_CHUNK_SHIFT;
	uint32_t key = idx & (PROFD_UNWIND_MAP_CHUNK_VALUES - 1), id;
	int fd, rc;

	if (bpf_map__lookup_elem(c->skel->maps.unwind_mappings, &chunk, sizeof(chunk), &id,
				 sizeof(id), 0))
		return -1;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return -1;
	rc = bpf_map_lookup_elem(fd, &key, m) ? -1 : 0;
	close(fd);
	return rc;
}

/* Every distinct file of pid with a loaded table.  Returns files
 * checked; *torch set when libtorch_cpu was one. */
static int check_process(struct lookup_ctx *c, pid_t pid, bool *torch)
{
	struct profd_unwind_proc pv;
	struct procmaps pm;
	uint32_t seen[4096], nseen = 0, i, j;
	int files = 0, err;

	if (bpf_map__lookup_elem(c->skel->maps.unwind_procs, &pid, sizeof(pid), &pv, sizeof(pv), 0) ||
	    procmaps_read(pid, &pm))
		return -1;
	for (i = 0; i < pv.map_count; i++) {
		uint32_t idx = pv.map_start + i;
		struct profd_unwind_mapping m;
		struct unwind_table t;
		const char *path = "?";
		uint64_t before = c->mismatches;

		if (mapping_read(c, idx, &m) || !m.npages)
			continue;
		for (j = 0; j < nseen && seen[j] != m.file_id; j++)
			;
		if (j < nseen || nseen == UW_ARRAY_SIZE(seen))
			continue;
		seen[nseen++] = m.file_id;
		err = build_for(pid, &pm, m.start, &t, &path);
		if (path[0] == '[') { /* the vdso: not a file to rebuild here */
			if (!err)
				unwind_table_free(&t);
			continue;
		}
		if (err || !t.nrows) {
			printf("  %s: not rebuilt\n", path);
			c->mismatches++;
			continue;
		}
		check_table(c, idx, &t);
		*torch |= strstr(path, "/libtorch_cpu.so") != NULL;
		if (c->mismatches != before || t.nrows > 100000)
			printf("  %s: %zu rows, %llu mismatches\n", path, t.nrows,
			       (unsigned long long)(c->mismatches - before));
		unwind_table_free(&t);
		files++;
	}
	procmaps_free(&pm);
	return files;
}

static pid_t spawn_target(const struct uw_env *env, bool *want_torch)
{
	/* SIGSTOP once imported: a timed wait guessed wrong on a cold page
	 * cache, where ld.so maps libtorch_python before libtorch_cpu. */
	char *torch_argv[] = {"/usr/bin/python3", "-c",
			      "import torch, os, signal, time; os.kill(os.getpid(), signal.SIGSTOP); "
			      "time.sleep(300)",
			      NULL};
	char *py_argv[] = {(char *)env->python, "-c", "import time; time.sleep(300)", NULL};
	pid_t pid;
	int i;

	*want_torch = access(TORCH_LIB ".1.13", R_OK) == 0 || access(TORCH_LIB, R_OK) == 0;
	if (!*want_torch) {
		printf("python3-torch not installed: checking python3.11's tables only\n");
		return env->python[0] ? uw_spawn_cmd(py_argv) : -1;
	}
	pid = uw_spawn_cmd(torch_argv);
	/* import torch maps ~300 files: up to 120 s on a cold, busy machine. */
	for (i = 0; pid > 0 && i < 1200 && !stopped(pid); i++)
		usleep(100 * 1000);
	if (pid > 0 && !stopped(pid)) {
		printf("python3 -c 'import torch' did not finish in 120 s\n");
		uw_reap(pid);
		return -1;
	}
	return pid;
}

int main(void)
{
	struct unwinder_stats st;
	struct unwinder *u = NULL;
	struct lookup_ctx c = {0};
	struct uw_env env;
	bool want_torch, torch = false;
	pid_t pid;
	int err, files, rc = 0;
	cpu_set_t cpu0;

	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	if (sched_setaffinity(0, sizeof(cpu0), &cpu0)) /* the rule cache is per CPU */
		printf("note: not pinned to CPU 0: %s\n", strerror(errno));
	err = uw_env_init(&env);
	if (err)
		return err == -EPERM ? 77 : 1;
	err = uw_open(NULL, 0, &c.skel, &u);
	if (err == -EPERM) {
		printf("SKIP: the machine refuses BPF (EPERM)\n");
		return 77;
	}
	if (err)
		return 1;
	c.prog_fd = bpf_program__fd(c.skel->progs.unwind_lookup);
	pid = spawn_target(&env, &want_torch);
	if (pid <= 0 || unwinder_add_process(u, pid)) {
		printf("FAIL: target process not started or not added\n");
		rc = 1;
		goto out;
	}
	unwinder_stats(u, &st);
	printf("%s process: %u files, %u with tables, %llu rows in %.1f MiB of %.0f MiB (%llu "
	       "refused), built in %.1f s\n",
	       want_torch ? "PyTorch" : "python3.11", st.files, st.files_loaded,
	       (unsigned long long)st.rows_loaded, (double)st.table_bytes_used / (1 << 20),
	       (double)st.table_bytes_limit / (1 << 20), (unsigned long long)st.refusals,
	       (double)st.build_ns_total / 1e9);
	files = check_process(&c, pid, &torch);
	printf("%d files checked, %llu lookups (%llu answered by the rule cache), %llu mismatches\n",
	       files, (unsigned long long)c.queries, (unsigned long long)c.cache_hits,
	       (unsigned long long)c.mismatches);
	if (files < 3 || c.mismatches || c.cache_hits < c.queries / 4 ||
	    (want_torch && (!torch || st.refusals))) {
		printf("FAIL: %s\n", c.mismatches	    ? "the BPF lookup disagrees with the rows"
				     : files < 3	    ? "too few files checked"
				     : c.cache_hits < c.queries / 4 ? "the rule cache was not used"
				     : st.refusals	    ? "tables refused under the default cap"
							    : "libtorch_cpu not checked");
		rc = 1;
	}
out:
	uw_reap(pid);
	unwinder_free(u);
	unwind_test_bpf__destroy(c.skel);
	printf("%s\n", rc ? "FAIL" : "PASS");
	return rc;
}
