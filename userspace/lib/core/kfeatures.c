/* kfeatures.c: probe what the kernel offers (kfeatures.h).  Map types and
 * helpers through libbpf's probes; BTF tracing attach points by loading
 * a two-instruction program and attaching it for a moment, since a kernel
 * may load a tracing program and still refuse to attach it (no
 * trampolines); the rest from /sys and /proc.  libbpf is kept quiet
 * meanwhile: a refused probe is an answer, not an error. */
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <mntent.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "arch.h"
#include "kfeatures.h"

#define WHY(f, i, ...) snprintf((f)->why[i], KF_WHY_LEN, __VA_ARGS__)

#define TRACEFS_MAGIC_NR 0x74726163 /* linux/magic.h TRACEFS_MAGIC */
#define PID_NS_INIT_INO 0xEFFFFFFCu /* PROC_PID_INIT_INO: the initial pid namespace */
#define KPROBE_PMU_TYPE "/sys/bus/event_source/devices/kprobe/type"
#define UPROBE_PMU_TYPE "/sys/bus/event_source/devices/uprobe/type"

/* Functions a probe fentry or kprobe hooks, the first the kernel has: the
 * ioctl syscall is what profd's GPU hook traces (gpu.bpf.h); the others
 * are traceable everywhere. */
static const char *const probe_fns[] = { ARCH_SYSCALL_FN("ioctl"), ARCH_SYSCALL_FN("getpid"),
					  "__task_pid_nr_ns" };

int kfeatures_parse_release(const char *release, int *major, int *minor, int *patch)
{
	int *part[3] = { major, minor, patch };
	const char *p = release;
	char *end;
	int i;

	*major = *minor = *patch = 0;
	if (*release < '0' || *release > '9')
		return -EINVAL;
	for (i = 0; i < 3 && *p >= '0' && *p <= '9'; i++) {
		long v = strtol(p, &end, 10);

		*part[i] = v > INT_MAX ? INT_MAX : (int)v;
		if (*end != '.') /* "6.1-rc2": patch stays 0 */
			break;
		p = end + 1;
	}
	return 0;
}

int kfeatures_parse_lockdown(const char *text, char *out, size_t len)
{
	const char *open, *close;
	size_t n;

	if (!text || !out || !len)
		return -EINVAL;
	out[0] = '\0';
	open = strchr(text, '[');
	if (!open)
		return 0;
	close = strchr(open, ']');
	if (!close)
		return -EINVAL;
	n = (size_t)(close - open - 1);
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(out, open + 1, n);
	out[n] = '\0';
	return 0;
}

bool kfeatures_at_least(const struct kfeatures *k, int major, int minor)
{
	return k->major > major || (k->major == major && k->minor >= minor);
}

/* A small file into buf, NUL-terminated: bytes read or -errno. */
static int read_text(const char *path, char *buf, size_t size)
{
	FILE *fp = fopen(path, "re");
	size_t n;

	if (!fp)
		return -errno;
	n = fread(buf, 1, size - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return (int)n;
}

static int read_int(const char *path, int *v)
{
	char buf[32], *end;
	long x;
	int n = read_text(path, buf, sizeof(buf));

	if (n < 0)
		return n;
	x = strtol(buf, &end, 10);
	if (end == buf)
		return -EINVAL;
	*v = (int)x;
	return 0;
}

/* libbpf's probe answers: 1 yes, 0 no, < 0 the probe could not run. */
static bool libbpf_answer(struct kfeatures *f, enum kfeature i, int r, const char *what,
			  const char *since)
{
	if (r == 1)
		WHY(f, i, "%s accepted", what);
	else if (r == 0)
		WHY(f, i, "%s refused by this kernel; %s", what, since);
	else
		WHY(f, i, "%s: probe failed: %s", what, strerror(-r));
	return r == 1;
}

static const struct bpf_insn ret0[] = {
	{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
	{ .code = BPF_JMP | BPF_EXIT },
};

/* libbpf's probes take a refusal for lack of privilege as an answer
 * (a helper probe then says yes, a map probe no): first see that a
 * perf_event program, the kind profd samples with, loads at all.  0 or
 * -errno. */
static int bpf_allowed(void)
{
	int fd = bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, "profd_kfeat", "GPL", ret0, 2, NULL);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static bool map_type(struct kfeatures *f, enum kfeature i, enum bpf_map_type type,
		     const char *name, const char *since)
{
	char what[64];

	snprintf(what, sizeof(what), "map type %s", name);
	return libbpf_answer(f, i, libbpf_probe_bpf_map_type(type, NULL), what, since);
}

static bool helper(struct kfeatures *f, enum kfeature i, enum bpf_func_id id, const char *name,
		   const char *since)
{
	char what[64];

	snprintf(what, sizeof(what), "%s helper in a perf_event program", name);
	return libbpf_answer(f, i, libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, id, NULL),
			     what, since);
}

static void probe_bpf_basics(struct kfeatures *f)
{
	f->ringbuf = map_type(f, KF_RINGBUF, BPF_MAP_TYPE_RINGBUF, "RINGBUF", "5.8+");
	f->task_storage =
		map_type(f, KF_TASK_STORAGE, BPF_MAP_TYPE_TASK_STORAGE, "TASK_STORAGE", "5.11+");
	f->bpf_loop = helper(f, KF_BPF_LOOP, BPF_FUNC_loop, "bpf_loop", "5.17+");
	f->task_pt_regs =
		helper(f, KF_TASK_PT_REGS, BPF_FUNC_task_pt_regs, "bpf_task_pt_regs", "5.15+");
	f->current_task_btf = helper(f, KF_CURRENT_TASK_BTF, BPF_FUNC_get_current_task_btf,
				     "bpf_get_current_task_btf", "5.11+");
	f->attach_cookie = helper(f, KF_ATTACH_COOKIE, BPF_FUNC_get_attach_cookie,
				  "bpf_get_attach_cookie", "5.15+");
}

/* bpf_copy_from_user_task is offered to sleepable programs only, which
 * perf_event programs never are, so libbpf cannot probe it: the kernel's
 * own list of helpers (enum bpf_func_id in its BTF) says whether it has
 * it, else the version does. */
static void probe_copy_from_user_task(struct kfeatures *f, const struct btf *vmlinux)
{
	const struct btf_type *t;
	const struct btf_enum *e;
	int id, i;

	id = vmlinux ? btf__find_by_name_kind(vmlinux, "bpf_func_id", BTF_KIND_ENUM) : -ENOENT;
	if (id <= 0) {
		f->copy_from_user_task = kfeatures_at_least(f, 5, 18);
		WHY(f, KF_COPY_FROM_USER_TASK, "by kernel version (5.18+): no helper list in BTF");
		return;
	}
	t = btf__type_by_id(vmlinux, (__u32)id);
	e = btf_enum(t);
	for (i = 0; i < btf_vlen(t); i++, e++) {
		const char *name = btf__name_by_offset(vmlinux, e->name_off);

		if (name && !strcmp(name, "BPF_FUNC_copy_from_user_task"))
			f->copy_from_user_task = true;
	}
	WHY(f, KF_COPY_FROM_USER_TASK, "%s the kernel's BTF helper list; sleepable programs only",
	    f->copy_from_user_task ? "in" : "not in");
}

int kfeatures_tracing_attaches(int btf_id, enum bpf_attach_type type, const char **step)
{
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = type,
		    .attach_btf_id = (__u32)btf_id);
	int prog, link, err = 0;

	*step = "load";
	prog = bpf_prog_load(BPF_PROG_TYPE_TRACING, "profd_kfeat", "GPL", ret0, 2, &o);
	if (prog < 0)
		return -errno;
	*step = "attach";
	link = bpf_raw_tracepoint_open(NULL, prog);
	if (link < 0)
		err = -errno;
	else
		close(link);
	close(prog);
	return err;
}

static void probe_tp_btf(struct kfeatures *f, const struct btf *vmlinux)
{
	const char *tp = "btf_trace_sched_process_exec", *step = "find";
	int id = btf__find_by_name_kind(vmlinux, tp, BTF_KIND_TYPEDEF), err;

	err = id > 0 ? kfeatures_tracing_attaches(id, BPF_TRACE_RAW_TP, &step) : -ENOENT;
	f->tp_btf = err == 0;
	if (err)
		WHY(f, KF_TP_BTF, "sched_process_exec: %s: %s", step, strerror(-err));
	else
		WHY(f, KF_TP_BTF, "sched_process_exec loaded and attached");
}

static void probe_trampolines(struct kfeatures *f, const struct btf *vmlinux)
{
	const char *step = "find", *fn = probe_fns[0];
	int id = -ENOENT, err;
	size_t i;

	for (i = 0; i < sizeof(probe_fns) / sizeof(probe_fns[0]) && id <= 0; i++) {
		fn = probe_fns[i];
		id = btf__find_by_name_kind(vmlinux, fn, BTF_KIND_FUNC);
	}
	err = id > 0 ? kfeatures_tracing_attaches(id, BPF_TRACE_FENTRY, &step) : -ENOENT;
	f->trampolines = err == 0;
	if (err)
		WHY(f, KF_TRAMPOLINES, "fentry on %s: %s: %s", fn, step, strerror(-err));
	else
		WHY(f, KF_TRAMPOLINES, "fentry on %s loaded and attached", fn);
}

/* The BTF-typed probes: tracing attach points and the helper list. */
static void probe_btf(struct kfeatures *f, bool bpf_ok)
{
	struct btf *vmlinux = f->btf ? btf__load_vmlinux_btf() : NULL;

	probe_copy_from_user_task(f, vmlinux);
	if (!vmlinux || !bpf_ok) {
		if (!vmlinux) {
			WHY(f, KF_TP_BTF, "no kernel BTF");
			WHY(f, KF_TRAMPOLINES, "no kernel BTF");
		}
		btf__free(vmlinux);
		return;
	}
	probe_tp_btf(f, vmlinux);
	probe_trampolines(f, vmlinux);
	btf__free(vmlinux);
}

/* Every BPF probe, with libbpf quiet. */
static void probe_bpf(struct kfeatures *f)
{
	static const enum kfeature gated[] = { KF_RINGBUF,	    KF_TASK_STORAGE, KF_BPF_LOOP,
					       KF_TASK_PT_REGS,	    KF_CURRENT_TASK_BTF,
					       KF_ATTACH_COOKIE,    KF_TP_BTF,
					       KF_TRAMPOLINES };
	libbpf_print_fn_t old = libbpf_set_print(NULL);
	int err = bpf_allowed();
	size_t i;

	f->btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	if (f->btf)
		WHY(f, KF_BTF, "/sys/kernel/btf/vmlinux readable");
	else
		WHY(f, KF_BTF, "/sys/kernel/btf/vmlinux: %s", strerror(errno));
	if (err)
		for (i = 0; i < sizeof(gated) / sizeof(gated[0]); i++)
			WHY(f, gated[i], "cannot probe: a perf_event program does not load: %s",
			    strerror(-err));
	else
		probe_bpf_basics(f);
	probe_btf(f, !err);
	libbpf_set_print(old);
}

static int perf_open(struct perf_event_attr *a)
{
	int cpu = sched_getcpu();

	a->size = sizeof(*a);
	a->disabled = 1;
	return (int)syscall(SYS_perf_event_open, a, -1, cpu < 0 ? 0 : cpu, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

/* What the sampler opens on every CPU: a cpu-clock software event. */
static void probe_perf_events(struct kfeatures *f)
{
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
				     .freq = 1, .sample_freq = 99 };
	int fd = perf_open(&a);

	f->perf_events = fd >= 0;
	if (fd < 0) {
		WHY(f, KF_PERF_EVENTS, "cpu-clock perf_event_open: %s", strerror(errno));
		return;
	}
	close(fd);
	WHY(f, KF_PERF_EVENTS, "cpu-clock event opened");
}

/* A kprobe made (and dropped, never enabled) through the kprobe PMU, the
 * way libbpf attaches them. */
static void probe_kprobes(struct kfeatures *f)
{
	struct perf_event_attr a = { 0 };
	int type, err, fd = -1;
	size_t i;

	err = read_int(KPROBE_PMU_TYPE, &type);
	if (err) {
		WHY(f, KF_KPROBES, "no kprobe PMU: %s: %s", KPROBE_PMU_TYPE, strerror(-err));
		return;
	}
	for (i = 0; i < sizeof(probe_fns) / sizeof(probe_fns[0]) && fd < 0; i++) {
		a.type = (__u32)type;
		a.config1 = (__u64)(uintptr_t)probe_fns[i];
		fd = perf_open(&a);
		err = fd < 0 ? -errno : 0;
	}
	f->kprobes = fd >= 0;
	if (fd >= 0)
		close(fd);
	WHY(f, KF_KPROBES, "kprobe on %s: %s", probe_fns[i - 1], err ? strerror(-err) : "created");
}

static void probe_files(struct kfeatures *f)
{
	int type, err = read_int(UPROBE_PMU_TYPE, &type);
	static const char *const tracefs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	struct statfs sf;
	size_t i;

	f->uprobes = err == 0;
	if (err)
		WHY(f, KF_UPROBES, "no uprobe PMU: %s: %s", UPROBE_PMU_TYPE, strerror(-err));
	else
		WHY(f, KF_UPROBES, "uprobe PMU type %d", type);
	WHY(f, KF_TRACEFS, "not mounted at %s or %s", tracefs[0], tracefs[1]);
	for (i = 0; i < 2 && !f->tracefs; i++) {
		f->tracefs = !statfs(tracefs[i], &sf) && sf.f_type == TRACEFS_MAGIC_NR;
		if (f->tracefs)
			WHY(f, KF_TRACEFS, "mounted at %s", tracefs[i]);
	}
	if (read_int("/proc/sys/kernel/perf_event_paranoid", &f->perf_event_paranoid))
		f->perf_event_paranoid = -99;
	if (read_int("/proc/sys/kernel/unprivileged_bpf_disabled", &f->unprivileged_bpf_disabled))
		f->unprivileged_bpf_disabled = -1;
}

static void probe_lockdown(struct kfeatures *f)
{
	char text[128];

	f->lockdown[0] = '\0';
	if (read_text("/sys/kernel/security/lockdown", text, sizeof(text)) > 0)
		kfeatures_parse_lockdown(text, f->lockdown, sizeof(f->lockdown));
}

static void probe_namespaces(struct kfeatures *f)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st)) {
		WHY(f, KF_PID_NS, "/proc/self/ns/pid: %s", strerror(errno));
		return;
	}
	f->pid_ns_init = st.st_ino == PID_NS_INIT_INO;
	WHY(f, KF_PID_NS, "pid:[%llu]%s", (unsigned long long)st.st_ino,
	    f->pid_ns_init ? "" : ": in a container, pids are translated");
}

/* cgroup v2 at /sys/fs/cgroup (unified), or beside v1 (hybrid). */
static void probe_cgroup2(struct kfeatures *f)
{
	FILE *fp = setmntent("/proc/self/mounts", "re");
	struct mntent *m;

	WHY(f, KF_CGROUP2, "no cgroup2 mount in /proc/self/mounts");
	if (!fp)
		return;
	while (!f->cgroup2 && (m = getmntent(fp))) {
		if (strcmp(m->mnt_type, "cgroup2"))
			continue;
		f->cgroup2 = true;
		WHY(f, KF_CGROUP2, "mounted at %s, %s", m->mnt_dir,
		    strcmp(m->mnt_dir, "/sys/fs/cgroup") ? "hybrid" : "unified");
	}
	endmntent(fp);
}

static const struct {
	const char *name;
	size_t off;
	enum kfeature why;
} bool_facts[] = {
#define FACT(field, i) { #field, offsetof(struct kfeatures, field), i }
	FACT(btf, KF_BTF),
	FACT(ringbuf, KF_RINGBUF),
	FACT(task_storage, KF_TASK_STORAGE),
	FACT(bpf_loop, KF_BPF_LOOP),
	FACT(task_pt_regs, KF_TASK_PT_REGS),
	FACT(current_task_btf, KF_CURRENT_TASK_BTF),
	FACT(copy_from_user_task, KF_COPY_FROM_USER_TASK),
	FACT(attach_cookie, KF_ATTACH_COOKIE),
	FACT(tp_btf, KF_TP_BTF),
	FACT(trampolines, KF_TRAMPOLINES),
	FACT(kprobes, KF_KPROBES),
	FACT(uprobes, KF_UPROBES),
	FACT(tracefs, KF_TRACEFS),
	FACT(perf_events, KF_PERF_EVENTS),
#undef FACT
};

static const char *paranoid_means(int v)
{
	switch (v) {
	case -99: return "unreadable";
	case 0: return "users: no raw tracepoints";
	case 1: return "users: no CPU-wide events";
	case 2: return "users: their own processes, user space only";
	}
	return v < 0 ? "no limit for any user" : "users: no perf events at all";
}

static const char *bpf_disabled_means(int v)
{
	if (v < 0)
		return "unreadable";
	return v == 0 ? "users may load BPF" : v == 1 ? "users may not load BPF, until reboot"
						     : "users may not load BPF";
}

/* What lockdown takes from a tracer: reads of kernel memory are what
 * BPF stack walks and probes are made of. */
static const char *lockdown_means(const char *mode)
{
	if (!mode[0])
		return "no /sys/kernel/security/lockdown: no lockdown LSM, or no securityfs";
	if (!strcmp(mode, "confidentiality"))
		return "BPF may not read kernel memory: tracing programs are refused";
	if (!strcmp(mode, "integrity"))
		return "BPF may not write user memory; profd does not";
	return "nothing locked down";
}

void kfeatures_print(const struct kfeatures *k, FILE *out)
{
	const char *root = k->root ? "; profd is root, not bound by it" : "";
	size_t i;

	fprintf(out, "kernel release: %s (%d.%d.%d)\n", k->release, k->major, k->minor, k->patch);
	for (i = 0; i < sizeof(bool_facts) / sizeof(bool_facts[0]); i++)
		fprintf(out, "%s: %s (%s)\n", bool_facts[i].name,
			*(const bool *)((const char *)k + bool_facts[i].off) ? "yes" : "no",
			k->why[bool_facts[i].why]);
	fprintf(out, "perf_event_paranoid: %d (%s%s)\n", k->perf_event_paranoid,
		paranoid_means(k->perf_event_paranoid), root);
	fprintf(out, "unprivileged_bpf_disabled: %d (%s%s)\n", k->unprivileged_bpf_disabled,
		bpf_disabled_means(k->unprivileged_bpf_disabled), root);
	fprintf(out, "lockdown: %s (%s)\n", k->lockdown[0] ? k->lockdown : "unknown",
		lockdown_means(k->lockdown));
	fprintf(out, "pid_ns_init: %s (%s)\n", k->pid_ns_init ? "yes" : "no", k->why[KF_PID_NS]);
	fprintf(out, "cgroup2: %s (%s)\n", k->cgroup2 ? "yes" : "no", k->why[KF_CGROUP2]);
}

int kfeatures_probe_helpers(struct kfeatures *f)
{
	libbpf_print_fn_t old;

	if (!f)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	old = libbpf_set_print(NULL);
	if (!bpf_allowed())
		probe_bpf_basics(f);
	libbpf_set_print(old);
	return 0;
}

int kfeatures_probe(struct kfeatures *f)
{
	struct utsname u;

	if (!f)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	if (uname(&u))
		return -errno;
	snprintf(f->release, sizeof(f->release), "%s", u.release);
	kfeatures_parse_release(f->release, &f->major, &f->minor, &f->patch);
	f->root = geteuid() == 0;
	probe_bpf(f);
	probe_perf_events(f);
	probe_kprobes(f);
	probe_files(f);
	probe_lockdown(f);
	probe_namespaces(f);
	probe_cgroup2(f);
	return 0;
}
