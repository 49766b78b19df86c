/* check.c: `profd --check`.  The kernel's facts (kfeatures.h), then one
 * line per profd feature saying whether this kernel can run it, and how or
 * why not, derived from those facts (each feature one function in
 * features[]); then the sampling object loaded for real, with what the
 * kernel refused of it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bpfload.h"
#include "daemon.h"
#include "check.h"
#include "kfeatures.h"
#include "log.h"
#include "sampler.h"

#define WHY_LEN 200

/* A feature's verdict: true if it can work, with how (or why not) in why. */
typedef bool (*feature_fn)(const struct kfeatures *k, char *why, size_t len);

static bool say(bool yes, char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static bool say(bool yes, char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return yes;
}

/* Adds name to the list in why ("missing: a, b"). */
static void missing(char *why, size_t len, const char *name)
{
	size_t n = strlen(why);

	snprintf(why + n, len - n, "%s%s", n ? ", " : "missing: ", name);
}

/* The missing ones among what every build of the sampling object needs
 * (exec and exit come through tp_btf), into why; true when none is. */
static bool sampling_needs(const struct kfeatures *k, char *why, size_t len)
{
	why[0] = '\0';
	if (!k->btf)
		missing(why, len, "kernel BTF");
	if (!k->ringbuf)
		missing(why, len, "ring buffer");
	if (!k->perf_events)
		missing(why, len, "cpu-clock perf events");
	if (!k->tp_btf)
		missing(why, len, "tp_btf");
	if (!strcmp(k->lockdown, "confidentiality"))
		missing(why, len, "kernel memory reads (lockdown=confidentiality)");
	return why[0] == '\0';
}

static bool modern_build(const struct kfeatures *k)
{
	return bpfload_variant_for(k) == BPFLOAD_MODERN;
}

static bool feat_cpu(const struct kfeatures *k, char *why, size_t len)
{
	if (!sampling_needs(k, why, len))
		return false;
	return say(true, why, len, "BTF, ring buffer, cpu-clock perf events, tp_btf; %s build",
		   modern_build(k) ? "modern" : "legacy");
}

static const char *loop_kind(const struct kfeatures *k)
{
	return modern_build(k) ? "bpf_loop walker"
			       : "bounded walker (legacy build), shorter stacks";
}

static bool feat_python(const struct kfeatures *k, char *why, size_t len)
{
	if (!sampling_needs(k, why, len))
		return false;
	return say(true, why, len, "%s", loop_kind(k));
}

static bool feat_native_unwind(const struct kfeatures *k, char *why, size_t len)
{
	if (!sampling_needs(k, why, len))
		return false;
	return say(true, why, len, "%s; user registers %s", loop_kind(k),
		   modern_build(k) ? "by bpf_task_pt_regs" : "from the task's kernel stack");
}

static bool feat_offcpu(const struct kfeatures *k, char *why, size_t len)
{
	if (!sampling_needs(k, why, len))
		return false;
	if (modern_build(k) && !bpfload_thread_pidfd())
		return say(true, why, len, "tp_btf sched_switch; the legacy build, blocks kept by "
					   "thread id (no thread pidfds before 6.9)");
	return say(true, why, len, "tp_btf sched_switch; blocks kept in %s",
		   modern_build(k) ? "task storage" : "a hash map by thread (legacy build)");
}

/* --memory: a page-fault software event runs the sampler's walker. */
static bool feat_memory(const struct kfeatures *k, char *why, size_t len)
{
	if (!sampling_needs(k, why, len))
		return false;
	return say(true, why, len, "page-fault perf event runs the stack walker");
}

static bool feat_uprobes(const struct kfeatures *k, char *why, size_t len, const char *on)
{
	if (!sampling_needs(k, why, len))
		return false;
	if (!k->uprobes)
		return say(false, why, len, "needs uprobes: %s", k->why[KF_UPROBES]);
	if (!k->attach_cookie)
		return say(false, why, len, "needs bpf_get_attach_cookie (5.15+)");
	return say(true, why, len, "uprobes on %s", on);
}

static bool feat_mmap(const struct kfeatures *k, char *why, size_t len)
{
	return feat_uprobes(k, why, len, "the C library's mmap, munmap, mremap and brk");
}

static bool feat_cuda(const struct kfeatures *k, char *why, size_t len)
{
	return feat_uprobes(k, why, len, "libcuda and libcudart entry points");
}

/* What --gpu-syscall-hook auto picks (gpu.c): fexit where trampolines
 * attach, else uprobes on the C library; the raw syscall tracepoints,
 * which slow every system call, only when asked for. */
static bool feat_gpu_hook(const struct kfeatures *k, char *why, size_t len)
{
	if (!sampling_needs(k, why, len))
		return false;
	if (k->trampolines)
		return say(true, why, len, "fentry/fexit on the ioctl and poll syscalls");
	if (k->uprobes)
		return say(true, why, len,
			   "uprobes on the C library's ioctl and poll, no trampolines%s",
			   k->tp_btf ? "; or --gpu-syscall-hook tracepoint" : "");
	if (k->tp_btf)
		return say(true, why, len, "only with --gpu-syscall-hook tracepoint "
					   "(no trampolines, no uprobes)");
	return say(false, why, len, "no trampolines, uprobes or tp_btf");
}

static const struct {
	const char *name;
	feature_fn fn;
} features[] = {
	{ "cpu sampling", feat_cpu },
	{ "python stacks", feat_python },
	{ "native unwinding (.eh_frame)", feat_native_unwind },
	{ "off-cpu", feat_offcpu },
	{ "memory", feat_memory },
	{ "mmap", feat_mmap },
	{ "gpu ioctl hook", feat_gpu_hook },
	{ "cuda uprobes", feat_cuda },
};

static void check_print_features(const struct kfeatures *k, FILE *out)
{
	char why[WHY_LEN];
	size_t i;

	fprintf(out, "features:\n");
	for (i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		bool yes = features[i].fn(k, why, sizeof(why));

		fprintf(out, "  %s: %s (%s)\n", features[i].name, yes ? "yes" : "no", why);
	}
}

static void ignore_event(void *ctx, const void *data, size_t len)
{
	(void)ctx;
	(void)data;
	(void)len;
}

/* The facts predict; the kernel decides: load the sampling object with
 * every optional program but the GPU's (which need a device or CUDA
 * library to watch), attach nothing, and say what the kernel refused.
 * false when the object itself could not be loaded. */
static bool check_print_load(FILE *out)
{
	struct sampler_opts so = {
		.offcpu = true, .memory = true, .mmap = true, .python_uprobe = true,
		.memory_sample_bytes = 2u << 20,
	};
	enum log_level was = log_get_level();
	const struct sampler_refusal *r;
	struct sampler *s;
	size_t i, n;

	fprintf(out, "loaded:\n"); /* for real: no GPU programs, nothing attached */
	log_set_level(LOG_ERROR); /* the refusals are listed below */
	s = sampler_open(&so, ignore_event, NULL);
	log_set_level(was);
	if (!s) {
		fprintf(out, "  sampling object: refused (%s; profd -v gives the kernel's words)\n",
			strerror(errno));
		return false;
	}
	fprintf(out, "  build: %s\n", sampler_variant(s));
	n = sampler_refusals(s, &r);
	for (i = 0; i < n; i++)
		fprintf(out, "  %s: refused (%s)\n", r[i].feature, r[i].why);
	if (!n)
		fprintf(out, "  programs: all (cpu sampling, off-CPU, memory, mmap, eval uprobe)\n");
	sampler_close(s);
	return true;
}

int daemon_check(FILE *out)
{
	struct kfeatures k;
	char why[WHY_LEN];
	int err = kfeatures_probe(&k);

	if (err) {
		fprintf(stderr, "profd: --check: cannot probe the kernel: %s\n", strerror(-err));
		return 1;
	}
	if (!k.root)
		fprintf(stderr, "profd: --check: not root (euid %u): BPF and perf probes may "
				"answer no for lack of privilege\n",
			(unsigned)geteuid());
	kfeatures_print(&k, out);
	check_print_features(&k, out);
	if (!feat_cpu(&k, why, sizeof(why)))
		return 1;
	return check_print_load(out) ? 0 : 1;
}
