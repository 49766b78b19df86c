/* uwtest.h: the machinery of test_unwind (header only: every
 * tests/bpf/test_*.c is its own executable): start a workload, load
 * unwind_test.bpf.c with the unwinder feeding it, sample the workload on
 * every CPU, symbolize the walks, and run perf beside it. */
#ifndef PROFD_TEST_UWTEST_H
#define PROFD_TEST_UWTEST_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "buf.h"
#include "log.h"
#include "procmaps.h"
#include "symbolize.h"
#include "unwind_test.skel.h"
#include "unwinder.h"

#define UW_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UW_MAX_FRAMES PROFD_UNWIND_MAX_FRAMES
#define UW_SAMPLE_HZ 999
#define UW_SAMPLE_SECONDS 3
#define UW_MAX_SAMPLES 20000
/* A walk check: at least this many samples, this share of them whole. */
#define UW_MIN_SAMPLES 200
#define UW_PASS_RATE 0.95

enum uw_module { UW_MOD_OTHER = 0, UW_MOD_EXE, UW_MOD_LIB, UW_MOD_LIBC };

struct uw_frame {
	char *name;
	int module;
	uint64_t ip;
};

struct uw_sample {
	struct uw_frame frames[UW_MAX_FRAMES];
	size_t nframes;
	uint32_t flags, user_mode;
};

struct uw_modules {
	char exe[PATH_MAX];
	char lib[PATH_MAX];
};

struct uw_file_line {
	char text[256];
	uint64_t first_byte, bytes; /* its rows in unwind_rows, when loaded */
};

struct uw_result {
	struct uw_sample *samples;
	struct uw_sample *fp_samples; /* the same samples by frame pointers */
	size_t nsamples;
	struct uw_modules mods;
	/* perf record --call-graph dwarf with its default 8 KiB stack copy
	 * ([0]) and with the largest one, dwarf,65528 ([1]) */
	long perf_samples[2], perf_ok[2];
	char perf_note[512];
	struct uw_file_line files[64];
	size_t nfiles;
	struct unwinder_stats stats;
	uint64_t counters[PROFD_UNWIND_CNT_MAX];
	uint64_t lost;		  /* ringbuf full in the BPF program */
	uint64_t run_ns, run_cnt; /* BPF run-time statistics of the program */
	uint32_t map_start, map_count; /* the process's slice of unwind_mappings at the end */
	/* raw events until symbolized */
	struct profd_unwind_test_event *raw;
	size_t nraw;
};

struct uw_env {
	char tmp[256]; /* short: commands are built from it */
	const char *cc;
	char python[PATH_MAX];
};

struct uw_proc {
	pid_t pid;
	int in_fd, out_fd;
	bool c_protocol; /* waits for a byte, dlopens, says "ready" */
};

static inline bool uw_is_elf(const char *path)
{
	char magic[4] = {0};
	FILE *f = fopen(path, "rb");
	bool elf = f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "\177ELF", 4);

	if (f)
		fclose(f);
	return elf;
}

/* $PROFD_TEST_PYTHON, else the first python3.11 on PATH that is a real
 * ELF executable (not a pyenv-style shim script), symlinks resolved. */
static inline int uw_find_python(char *out, size_t size)
{
	const char *env = getenv("PROFD_TEST_PYTHON"), *path = getenv("PATH");
	char cand[PATH_MAX], real[PATH_MAX];
	bool found = false;

	out[0] = '\0';
	if (env && *env) {
		if (!realpath(env, real))
			return -errno;
		found = true;
	}
	while (!found && path && *path) {
		size_t n = strcspn(path, ":");

		snprintf(cand, sizeof(cand), "%.*s/python3.11", (int)n, path);
		found = access(cand, X_OK) == 0 && realpath(cand, real) && uw_is_elf(real);
		path += n + (path[n] == ':');
	}
	if (!found)
		return -ENOENT;
	return snprintf(out, size, "%s", real) < (int)size ? 0 : -ENAMETOOLONG;
}

/* Logging (PROFD_TEST_VERBOSE for debug), root, a scratch directory,
 * the C compiler and python3.11: 0, -EPERM (not root) or -errno. */
static inline int uw_env_init(struct uw_env *env)
{
	const char *base = getenv("PROFD_TEST_TMP");
	char tmpl[PATH_MAX], dir[PATH_MAX];

	memset(env, 0, sizeof(*env));
	log_set_level(getenv("PROFD_TEST_VERBOSE") ? LOG_DEBUG : LOG_WARN);
	log_route_libbpf();
	if (geteuid() != 0) {
		printf("SKIP: needs root for BPF and perf events\n");
		return -EPERM;
	}
	if (!base || !*base)
		base = "/tmp";
	mkdir(base, 0755);
	snprintf(tmpl, sizeof(tmpl), "%s/test_unwind.XXXXXX", base);
	if (!mkdtemp(tmpl) || !realpath(tmpl, dir) || strlen(dir) >= sizeof(env->tmp)) {
		fprintf(stderr, "test_unwind: cannot make a directory under %s: %s\n", base,
			strerror(errno));
		return -EIO;
	}
	memcpy(env->tmp, dir, strlen(dir) + 1);
	env->cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
	uw_find_python(env->python, sizeof(env->python));
	return 0;
}

static inline int uw_write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

/* C workload: exe lib (protocol on stdin/stdout); python: exe -c code. */
static inline int uw_spawn(struct uw_proc *p, const char *exe, const char *arg, bool c_protocol)
{
	int in[2], out[2];

	memset(p, 0, sizeof(*p));
	p->in_fd = p->out_fd = -1;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -errno;
	p->pid = fork();
	if (p->pid < 0)
		return -errno;
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (c_protocol)
			execl(exe, exe, arg, (char *)NULL);
		else
			execl(exe, exe, "-c", arg, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->in_fd = in[1];
	p->out_fd = out[0];
	p->c_protocol = c_protocol;
	return 0;
}

static inline void uw_kill(struct uw_proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
	}
	if (p->in_fd >= 0)
		close(p->in_fd);
	if (p->out_fd >= 0)
		close(p->out_fd);
}

/* Let the C workload dlopen its library and wait until it has. */
static inline int uw_trigger_dlopen(struct uw_proc *p)
{
	struct pollfd pfd = {.fd = p->out_fd, .events = POLLIN};
	char buf[16] = {0};

	if (write(p->in_fd, "g", 1) != 1)
		return -EIO;
	if (poll(&pfd, 1, 10000) != 1 || read(p->out_fd, buf, sizeof(buf) - 1) <= 0 ||
	    strncmp(buf, "ready", 5)) {
		fprintf(stderr, "test_unwind: workload did not get ready\n");
		return -EIO;
	}
	return 0;
}

/* ---- perf record --call-graph dwarf beside us ---- */

static const char *const uw_perf_modes[2] = {"dwarf", "dwarf,65528"};

static inline pid_t uw_perf_start(const struct uw_env *env, pid_t target, int seconds, int mode)
{
	char cmd[1024];
	pid_t pid;

	snprintf(cmd, sizeof(cmd),
		 "perf record -q -e cpu-clock -F %d --call-graph %s -p %d -o %s/perf%d.data "
		 "-- sleep %d >%s/perf%d.log 2>&1",
		 UW_SAMPLE_HZ, uw_perf_modes[mode], (int)target, env->tmp, mode, seconds, env->tmp,
		 mode);
	pid = fork();
	if (pid == 0)
		_exit(system(cmd) == 0 ? 0 : 1);
	return pid;
}

/* A perf script frame line: "\t    addr sym+0xoff (dso)". */
static inline bool uw_perf_frame_is(const char *line, const char *prefix)
{
	const char *p = line + strspn(line, " \t");

	p += strcspn(p, " ");
	p += strspn(p, " ");
	return !strncmp(p, prefix, strlen(prefix)) &&
	       (p[strlen(prefix)] == '+' || p[strlen(prefix)] == ' ' || prefix[0] == '_');
}

/* Samples in perf's script output that reached main and then libc's
 * start code. */
static inline void uw_perf_collect(const struct uw_env *env, pid_t perf, int mode,
				   struct uw_result *r)
{
	char cmd[1024], line[4096];
	int status = 0, state = 0; /* 0: outside, 1: in sample, 2: saw main */
	bool ok = false;
	FILE *f;

	r->perf_samples[mode] = -1;
	if (perf <= 0 || waitpid(perf, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		snprintf(r->perf_note, sizeof(r->perf_note),
			 "perf record failed, see %s/perf%d.log", env->tmp, mode);
		return;
	}
	snprintf(cmd, sizeof(cmd), "perf script -i %s/perf%d.data 2>/dev/null", env->tmp, mode);
	f = popen(cmd, "r");
	if (!f)
		return;
	r->perf_samples[mode] = r->perf_ok[mode] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '\n') {
			r->perf_ok[mode] += ok;
			state = 0;
			ok = false;
		} else if (line[0] != '\t' && line[0] != ' ') {
			r->perf_samples[mode]++;
			state = 1;
		} else if (state == 1 && uw_perf_frame_is(line, "main")) {
			state = 2;
		} else if (state == 2 && (uw_perf_frame_is(line, "__libc_start_call_main") ||
					  uw_perf_frame_is(line, "__libc_start_main"))) {
			ok = true;
		}
	}
	r->perf_ok[mode] += ok;
	pclose(f);
}

/* ---- sampling with the BPF unwinder ---- */

static int uw_on_event(void *ctx, void *data, size_t len)
{
	struct uw_result *r = ctx;

	if (len < sizeof(struct profd_unwind_test_event) || r->nraw == UW_MAX_SAMPLES)
		return 0;
	memcpy(&r->raw[r->nraw++], data, sizeof(struct profd_unwind_test_event));
	return 0;
}

static inline int uw_drop_event(void *ctx, void *data, size_t len)
{
	(void)ctx;
	(void)data;
	(void)len;
	return 0;
}

/* cpu-clock on every online CPU, each running the program. */
static inline int uw_attach(struct unwind_test_bpf *skel, struct bpf_link **links, int ncpus)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_SOFTWARE,
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .size = sizeof(attr),
	    .freq = 1,
	    .sample_freq = UW_SAMPLE_HZ,
	};
	int cpu, fd, n = 0;

	for (cpu = 0; cpu < ncpus; cpu++) {
		fd = (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* offline */
			return -errno;
		}
		links[cpu] = bpf_program__attach_perf_event(skel->progs.on_unwind_sample, fd);
		if (!links[cpu]) {
			close(fd);
			return -errno;
		}
		n++;
	}
	return n ? 0 : -ENODEV;
}

static void uw_file_cb(void *ctx, const struct unwinder_file_info *fi)
{
	struct uw_result *r = ctx;

	if (r->nfiles == UW_ARRAY_SIZE(r->files))
		return;
	r->files[r->nfiles].first_byte = fi->first_byte;
	r->files[r->nfiles].bytes = fi->bytes;
	snprintf(r->files[r->nfiles++].text, sizeof(r->files[0].text),
		 "%-48s %-8s %7u rows %8.1f KiB  built in %6.1f ms", fi->path, fi->state, fi->rows,
		 (double)fi->bytes / 1024, (double)fi->build_ns / 1e6);
}

static inline int uw_module_of(const struct uw_modules *mods, const struct procmap *m)
{
	const char *base;

	if (!m || !m->path[0])
		return UW_MOD_OTHER;
	if (!strcmp(m->path, mods->exe))
		return UW_MOD_EXE;
	if (mods->lib[0] && !strcmp(m->path, mods->lib))
		return UW_MOD_LIB;
	base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	return strncmp(base, "libc.so", 7) ? UW_MOD_OTHER : UW_MOD_LIBC;
}

static inline void uw_symbolize_one(struct symbolizer *sym, pid_t pid, const struct procmaps *maps,
				    const struct uw_modules *mods, const __u64 *ips, uint32_t nr,
				    struct buf *name, struct uw_sample *s)
{
	size_t j;

	for (j = 0; j < nr && j < UW_MAX_FRAMES; j++) {
		uint32_t kind;

		buf_reset(name);
		symbolizer_user(sym, (int)pid, maps, ips[j], j > 0, name, &kind, NULL);
		s->frames[j].name = strdup(buf_cstr(name) ? buf_cstr(name) : "?");
		s->frames[j].ip = ips[j];
		s->frames[j].module = uw_module_of(mods, procmaps_find(maps, ips[j] - (j > 0)));
	}
	s->nframes = j;
}

/* Both walks of every event: ours into samples, bpf_get_stack's frame
 * pointer walk into fp_samples (taken as complete when it ended before
 * the depth limit, so it is judged on its frames alone). */
static inline int uw_symbolize(pid_t pid, struct uw_result *r)
{
	struct symbolizer *sym = symbolizer_new(NULL);
	struct procmaps maps;
	struct buf name;
	size_t i;
	int err;

	if (!sym)
		return -errno;
	err = procmaps_read((int)pid, &maps);
	if (err) {
		symbolizer_free(sym);
		return err;
	}
	buf_init(&name);
	r->samples = calloc(r->nraw ? r->nraw : 1, sizeof(*r->samples));
	r->fp_samples = calloc(r->nraw ? r->nraw : 1, sizeof(*r->fp_samples));
	for (i = 0; r->samples && r->fp_samples && i < r->nraw; i++) {
		const struct profd_unwind_test_event *e = &r->raw[i];
		struct uw_sample *s = &r->samples[i], *fp = &r->fp_samples[i];

		s->flags = e->flags;
		fp->user_mode = s->user_mode = e->user_mode;
		fp->flags = e->fp_nr < UW_MAX_FRAMES ? PROFD_UNWIND_F_END : 0;
		uw_symbolize_one(sym, pid, &maps, &r->mods, e->ips, e->nr, &name, s);
		uw_symbolize_one(sym, pid, &maps, &r->mods, e->fp_ips, e->fp_nr, &name, fp);
		r->nsamples = i + 1;
	}
	buf_free(&name);
	procmaps_free(&maps);
	symbolizer_free(sym);
	return r->samples && r->fp_samples ? 0 : -ENOMEM;
}

/* Open and load the test skeleton with the unwinder's maps sized from o,
 * then the unwinder itself.  0 or -errno (-EPERM: BPF refused). */
static inline int uw_open(const struct unwinder_opts *o, uint32_t target,
			  struct unwind_test_bpf **skelp, struct unwinder **up)
{
	struct unwind_test_bpf *skel = unwind_test_bpf__open();
	struct unwinder_maps maps;
	int err;

	*skelp = skel;
	*up = NULL;
	if (!skel)
		return -errno;
	skel->rodata->target_tgid = target;
	maps = (struct unwinder_maps){skel->maps.unwind_rows, skel->maps.unwind_mappings,
				      skel->maps.unwind_procs, skel->maps.unwind_counters,
				      skel->maps.unwind_rule_cache, &skel->data->unwind_epoch};
	err = unwinder_size_maps(&maps, o);
	if (!err)
		err = unwind_test_bpf__load(skel);
	if (err) {
		fprintf(stderr, "test_unwind: failed to load BPF: %s\n", strerror(-err));
		return err;
	}
	*up = unwinder_new(o, &maps);
	return *up ? 0 : -errno;
}

/* Whether pid's maps already name libc: the loader has run. */
static inline bool uw_maps_libc(pid_t pid)
{
	struct procmaps m;
	bool found = false;
	size_t i;

	if (procmaps_read((int)pid, &m))
		return false;
	for (i = 0; i < m.n && !found; i++)
		found = strstr(m.maps[i].path, "/libc.so") != NULL;
	procmaps_free(&m);
	return found;
}

/* Run argv (stdin and stdout /dev/null) and wait until it has exec'ed
 * and its libc is mapped. */
static inline pid_t uw_spawn_cmd(char *const argv[])
{
	char self[PATH_MAX] = "", path[64], exe[PATH_MAX];
	pid_t pid;
	int i;

	if (readlink("/proc/self/exe", self, sizeof(self) - 1) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);

		dup2(fd, 0);
		dup2(fd, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	for (i = 0; pid > 0 && i < 200; i++) {
		ssize_t n = readlink(path, exe, sizeof(exe) - 1);

		if (n > 0 && (exe[n] = '\0', strcmp(exe, self)) && uw_maps_libc(pid))
			return pid;
		usleep(10 * 1000);
	}
	return -1;
}

static inline void uw_reap(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static inline void uw_prog_stats(struct unwind_test_bpf *skel, struct uw_result *r)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.on_unwind_sample), &info, &len)) {
		r->run_ns = info.run_time_ns;
		r->run_cnt = info.run_cnt;
	}
}

/* pid's slice of unwind_mappings, into r. */
static inline void uw_slice_of(struct unwind_test_bpf *skel, pid_t pid, struct uw_result *r)
{
	struct profd_unwind_proc pv;

	if (!bpf_map__lookup_elem(skel->maps.unwind_procs, &pid, sizeof(pid), &pv, sizeof(pv), 0)) {
		r->map_start = pv.map_start;
		r->map_count = pv.map_count;
	}
}

/* Load, feed the unwinder (the nfill processes of fill first, so that
 * their tables take the low rows), sample p for SAMPLE_SECONDS,
 * symbolize. */
static inline int uw_profile_after(const struct uw_env *env, struct uw_proc *p,
				   struct uw_result *r, bool with_perf, const pid_t *fill,
				   size_t nfill)
{
	int ncpus = libbpf_num_possible_cpus(), err, i;
	struct bpf_link *links[1024] = {0};
	struct unwind_test_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct unwinder *u = NULL;
	struct timespec t0, t;
	pid_t perf[2] = {-1, -1};
	int stats_fd;

	r->raw = calloc(UW_MAX_SAMPLES, sizeof(*r->raw));
	if (!r->raw || ncpus <= 0 || ncpus > 1024)
		return -ENOMEM;
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME); /* for the cost per walk */
	err = uw_open(NULL, (uint32_t)p->pid, &skel, &u);
	if (err)
		goto out;
	for (i = 0; !err && (size_t)i < nfill; i++)
		err = unwinder_add_process(u, fill[i]);
	if (!err)
		err = unwinder_add_process(u, p->pid);
	if (!err && p->c_protocol) {
		err = uw_trigger_dlopen(p);
		if (!err)
			err = unwinder_refresh_process(u, p->pid); /* the dlopen'ed library */
	}
	rb = err ? NULL
		 : ring_buffer__new(bpf_map__fd(skel->maps.unwind_events), uw_on_event, r, NULL);
	if (!err && !rb)
		err = -errno;
	if (!err)
		err = uw_attach(skel, links, ncpus);
	if (err) {
		fprintf(stderr, "test_unwind: setup failed: %s\n", strerror(-err));
		goto out;
	}
	for (i = 0; with_perf && i < 2; i++)
		perf[i] = uw_perf_start(env, p->pid, UW_SAMPLE_SECONDS, i);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		ring_buffer__poll(rb, 100);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 <
		 UW_SAMPLE_SECONDS * 1000);
	for (i = 0; i < ncpus; i++)
		bpf_link__destroy(links[i]);
	memset(links, 0, sizeof(links));
	ring_buffer__consume(rb);
	r->lost = skel->bss->lost;
	uw_prog_stats(skel, r);
	for (i = 0; with_perf && i < 2; i++)
		uw_perf_collect(env, perf[i], i, r);
	unwinder_stats(u, &r->stats);
	uw_slice_of(skel, p->pid, r);
	unwinder_counters(u, r->counters);
	unwinder_for_each_file(u, uw_file_cb, r);
	err = uw_symbolize(p->pid, r);
out:
	for (i = 0; i < ncpus && i < 1024; i++)
		bpf_link__destroy(links[i]);
	ring_buffer__free(rb);
	unwinder_free(u);
	unwind_test_bpf__destroy(skel);
	if (stats_fd >= 0)
		close(stats_fd);
	return err;
}

static inline int uw_profile(const struct uw_env *env, struct uw_proc *p, struct uw_result *r,
			     bool with_perf)
{
	return uw_profile_after(env, p, r, with_perf, NULL, 0);
}

/* From frames[i]: libc's start code calling main, then _start of the
 * executable as the last frame, where the walk ended cleanly.  Without
 * libc's debug symbols __libc_start_call_main has no name; accept that. */
static inline bool uw_reaches_libc_start(const struct uw_sample *s, size_t i,
					 const struct uw_modules *mods, int exe_mod)
{
	const struct uw_frame *f = s->frames;

	(void)mods;
	if (i + 3 != s->nframes || !(s->flags & PROFD_UNWIND_F_END))
		return false;
	if (f[i].module != UW_MOD_LIBC ||
	    (strcmp(f[i].name, "__libc_start_call_main") && f[i].name[0] != '['))
		return false;
	if (f[i + 1].module != UW_MOD_LIBC || strncmp(f[i + 1].name, "__libc_start_main", 17))
		return false;
	return f[i + 2].module == exe_mod &&
	       (!strcmp(f[i + 2].name, "_start") || f[i + 2].name[0] == '[');
}

static inline void uw_print_sample(const char *what, const struct uw_sample *s)
{
	static const char *const mods[] = {"other", "exe", "lib", "libc"};
	size_t i;

	printf("  %s: flags %#x%s, %zu frames:\n", what, s->flags, s->user_mode ? "" : " (kernel)",
	       s->nframes);
	for (i = 0; i < s->nframes; i++)
		printf("    #%-2zu %-5s %#14llx %s\n", i, mods[s->frames[i].module],
		       (unsigned long long)s->frames[i].ip, s->frames[i].name);
}

static inline void uw_print_tables(const struct uw_result *r, const char *what)
{
	size_t i;

	if (!r->nfiles)
		return;
	printf("%s: unwind tables (%u files, %llu rows, %.1f KiB of %.0f MiB; %u mappings):\n",
	       what, r->stats.files, (unsigned long long)r->stats.rows_loaded,
	       (double)r->stats.table_bytes_used / 1024,
	       (double)r->stats.table_bytes_limit / (1 << 20), r->stats.mappings_used);
	for (i = 0; i < r->nfiles; i++)
		printf("  %s\n", r->files[i].text);
	if (r->counters[PROFD_UNWIND_CNT_CALLS])
		printf("  BPF program: %llu runs, %.1f us per walk on average (walk, bpf_get_stack "
		       "and ringbuf output together)\n",
		       (unsigned long long)r->run_cnt,
		       (double)r->run_ns / 1000.0 / (double)r->counters[PROFD_UNWIND_CNT_CALLS]);
	printf("  BPF: ringbuf_lost=%llu", (unsigned long long)r->lost);
	for (i = 0; i < PROFD_UNWIND_CNT_MAX; i++)
		printf(" %s=%llu", unwinder_counter_name((int)i),
		       (unsigned long long)r->counters[i]);
	printf("\n");
}

static inline void uw_result_free(struct uw_result *r)
{
	size_t i, j;

	for (i = 0; i < r->nsamples; i++) {
		for (j = 0; j < r->samples[i].nframes; j++)
			free(r->samples[i].frames[j].name);
		for (j = 0; j < r->fp_samples[i].nframes; j++)
			free(r->fp_samples[i].frames[j].name);
	}
	free(r->samples);
	free(r->fp_samples);
	free(r->raw);
	memset(r, 0, sizeof(*r));
}

/* One check's line: "ok" or "FAILED" and what it is; ok again. */
static inline bool uw_expect(bool ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	return ok;
}

/* Remove the scratch directory of a run that passed (rc 0); a
 * failure's programs and perf data are kept for a look. */
static inline void uw_clean_up(const struct uw_env *env, int rc)
{
	char cmd[sizeof(env->tmp) + 16];

	if (rc)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", env->tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", env->tmp);
}

#endif
