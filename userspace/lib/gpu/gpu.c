/* gpu.c: which devices to watch, the BPF side's configuration and the
 * syscall hooks (fentry/fexit on the syscall functions where BPF
 * trampolines attach, else uprobes on the C library's functions,
 * gpu_libc.c; the raw syscall tracepoints when asked for).  Devices are
 * found by number, never by path: drivers register their majors in
 * /proc/devices, and --gpu-device adds any character device (a test's
 * stand-in, or a driver this table does not know) by its rdev. */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "arch.h"
#include "bpfcount.h"
#include "gpu_int.h"
#include "kfeatures.h"
#include "log.h"
#include "sample.skel.h"

#define NVIDIA_MAJOR 195
#define DRM_RENDER_MINOR_MIN 128
#define DRM_RENDER_MINOR_MAX 255
#define MAX_MAJOR 4095 /* 12 bits */

static const char *const class_names[PROFD_GPU_CLASS_MAX] = {
	[PROFD_GPU_CLASS_GENERIC] = "generic", [PROFD_GPU_CLASS_NVIDIA] = "nvidia",
	[PROFD_GPU_CLASS_UVM] = "nvidia-uvm",  [PROFD_GPU_CLASS_KFD] = "kfd",
	[PROFD_GPU_CLASS_DRM] = "drm",
};

int gpu_class_from_name(const char *name)
{
	int i;

	if (strcmp(name, "uvm") == 0)
		return PROFD_GPU_CLASS_UVM;
	for (i = 0; i < PROFD_GPU_CLASS_MAX; i++)
		if (strcmp(name, class_names[i]) == 0)
			return i;
	return -1;
}

const char *gpu_class_name(uint32_t cls)
{
	return cls < PROFD_GPU_CLASS_MAX ? class_names[cls] : "?";
}

uint32_t gpu_class_ioc_type(uint32_t cls)
{
	switch (cls) {
	case PROFD_GPU_CLASS_NVIDIA: return 'F';
	case PROFD_GPU_CLASS_UVM: return 0; /* plain numbers: the type byte is 0 */
	case PROFD_GPU_CLASS_KFD: return 'K';
	case PROFD_GPU_CLASS_DRM: return 'd';
	default: return PROFD_GPU_ANY_TYPE;
	}
}

bool gpu_cmd_traced(const struct profd_gpu_dev *d, const uint8_t *filter, uint32_t cmd)
{
	if (d->cls >= PROFD_GPU_CLASS_MAX)
		return false;
	if (d->ioc_type != PROFD_GPU_ANY_TYPE && ((cmd >> 8) & 0xff) != d->ioc_type)
		return false;
	return filter[d->cls * 256 + (cmd & 0xff)] != 0;
}

static struct gpu_device whole_major(uint32_t major, uint32_t cls, uint32_t lo, uint32_t hi)
{
	struct gpu_device d = {
		.key = major << PROFD_GPU_MINORBITS | PROFD_GPU_ALL_MINORS,
		.dev = { cls, gpu_class_ioc_type(cls), lo, hi },
	};

	return d;
}

/* The class a /proc/devices entry is watched as, or -1. */
static int class_of_driver(unsigned major, const char *name)
{
	if (strcmp(name, "nvidia-uvm") == 0)
		return PROFD_GPU_CLASS_UVM;
	if (strcmp(name, "kfd") == 0)
		return PROFD_GPU_CLASS_KFD;
	if (strcmp(name, "drm") == 0)
		return PROFD_GPU_CLASS_DRM;
	if (strcmp(name, "nvidia") == 0 || strcmp(name, "nvidia-frontend") == 0 ||
	    (major == NVIDIA_MAJOR && strncmp(name, "nvidia", 6) == 0))
		return PROFD_GPU_CLASS_NVIDIA;
	return -1;
}

static bool have_key(const struct gpu_device *out, size_t n, uint32_t key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (out[i].key == key)
			return true;
	return false;
}

/* One "NNN name" line of the character section; 1 if stored. */
static int parse_driver_line(const char *line, size_t len, struct gpu_device *out, size_t n)
{
	char name[64];
	unsigned major = 0;
	size_t i = 0, k = 0;
	int cls;

	while (i < len && line[i] == ' ')
		i++;
	if (i == len || !isdigit((unsigned char)line[i]))
		return 0;
	for (; i < len && isdigit((unsigned char)line[i]); i++) {
		major = major * 10 + (unsigned)(line[i] - '0');
		if (major > MAX_MAJOR)
			return 0;
	}
	if (i == len || line[i++] != ' ')
		return 0;
	while (i < len && k < sizeof(name) - 1)
		name[k++] = line[i++];
	if (i < len)
		return 0; /* longer than any driver name */
	name[k] = '\0';
	cls = class_of_driver(major, name);
	if (cls < 0)
		return 0;
	out[n] = cls == PROFD_GPU_CLASS_DRM
			 ? whole_major(major, (uint32_t)cls, DRM_RENDER_MINOR_MIN, DRM_RENDER_MINOR_MAX)
			 : whole_major(major, (uint32_t)cls, 0, PROFD_GPU_ALL_MINORS);
	return !have_key(out, n, out[n].key);
}

int gpu_parse_proc_devices(const char *text, size_t len, struct gpu_device *out, size_t max)
{
	const char *p = text, *end = text + len;
	bool in_char = false, seen = false;
	size_t n = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (l == 18 && memcmp(p, "Character devices:", 18) == 0) {
			in_char = seen = true;
		} else if (l == 0 || (l >= 6 && memcmp(p, "Block ", 6) == 0)) {
			in_char = false;
		} else if (in_char && n < max) {
			n += (size_t)parse_driver_line(p, l, out, n);
		}
		p += l + (nl ? 1 : 0);
	}
	return seen ? (int)n : -EINVAL;
}

static int read_small_file(const char *path, char *buf, size_t cap, size_t *len)
{
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	*len = fread(buf, 1, cap - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return 0;
}

static int discover_drivers(struct gpu *g, const struct gpu_opts *o)
{
	char path[512], text[16384];
	size_t len = 0;
	int n;

	if (o->proc_devices)
		snprintf(path, sizeof(path), "%s", o->proc_devices);
	else
		snprintf(path, sizeof(path), "%s/devices", g->proc_root);
	if (read_small_file(path, text, sizeof(text), &len)) {
		log_warn("gpu: cannot read %s: %s", path, strerror(errno));
		return 0;
	}
	n = gpu_parse_proc_devices(text, len, g->devs, GPU_MAX_DEVICES);
	if (n < 0) {
		log_warn("gpu: %s is not in the /proc/devices format", path);
		return 0;
	}
	g->ndevs = (size_t)n;
	return 0;
}

/* --gpu-device PATH[=CLASS]: a character device, watched by its rdev. */
static int add_device_option(struct gpu *g, const char *spec)
{
	const char *eq = strrchr(spec, '=');
	int cls = PROFD_GPU_CLASS_GENERIC;
	struct gpu_device *d;
	struct stat st;
	char *path;

	path = eq ? strndup(spec, (size_t)(eq - spec)) : strdup(spec);
	if (!path)
		return -ENOMEM;
	if (eq && (cls = gpu_class_from_name(eq + 1)) < 0) {
		log_error("gpu: --gpu-device %s: unknown class '%s' (nvidia, uvm, kfd, drm, generic)",
			  spec, eq + 1);
		goto inval;
	}
	if (stat(path, &st) || !S_ISCHR(st.st_mode)) {
		log_error("gpu: --gpu-device %s: not a character device", path);
		goto inval;
	}
	if (g->ndevs >= GPU_MAX_DEVICES) {
		log_error("gpu: at most %d devices", GPU_MAX_DEVICES);
		goto inval;
	}
	d = &g->devs[g->ndevs++];
	d->key = major(st.st_rdev) << PROFD_GPU_MINORBITS | minor(st.st_rdev);
	d->dev = (struct profd_gpu_dev){ (uint32_t)cls, gpu_class_ioc_type((uint32_t)cls), 0, 0 };
	d->path = path;
	return 0;
inval:
	free(path);
	return -EINVAL;
}

static bool has_nvidia(const struct gpu *g)
{
	size_t i;

	for (i = 0; i < g->ndevs; i++)
		if (!g->devs[i].path && (g->devs[i].dev.cls == PROFD_GPU_CLASS_NVIDIA ||
					 g->devs[i].dev.cls == PROFD_GPU_CLASS_UVM))
			return true;
	return false;
}

struct gpu *gpu_new(const struct gpu_opts *o)
{
	struct gpu *g = calloc(1, sizeof(*g));
	size_t i;
	int err = -ENOMEM;

	if (!g)
		goto fail;
	g->mode = o->mode;
	g->hook = o->hook == GPU_HOOK_TRACEPOINT || o->hook == GPU_HOOK_UPROBE ? o->hook
									       : GPU_HOOK_AUTO;
	g->st.hook = GPU_HOOK_NONE;
	g->comm = o->comm;
	g->proc_root = strdup(o->proc_root ? o->proc_root : "/proc");
	g->devs = calloc(GPU_MAX_DEVICES, sizeof(*g->devs));
	if (!g->proc_root || !g->devs)
		goto fail;
	if (g->mode == GPU_MODE_OFF)
		return g;
	err = discover_drivers(g, o);
	for (i = 0; !err && i < o->ndevices; i++)
		err = add_device_option(g, o->devices[i]);
	if (err)
		goto fail;
	g->cuda = g->mode == GPU_MODE_ON || has_nvidia(g);
	g->cuda_launches = o->cuda_launches;
	g->st.devices = g->ndevs;
	return g;
fail:
	gpu_free(g);
	errno = -err;
	return NULL;
}

void gpu_free(struct gpu *g)
{
	size_t i;

	if (!g)
		return;
	gpu_uprobe_free(g);
	for (i = 0; i < GPU_MAX_SYS_LINKS; i++)
		bpf_link__destroy(g->sys_links[i]);
	for (i = 0; g->devs && i < g->ndevs; i++)
		free(g->devs[i].path);
	free(g->devs);
	free(g->proc_root);
	free(g);
}

bool gpu_enabled(const struct gpu *g)
{
	return g && ((g->mode != GPU_MODE_OFF && (g->ndevs || g->cuda)) || g->comm);
}

const struct gpu_device *gpu_find_device(const struct gpu *g, uint32_t rdev)
{
	uint32_t minor = rdev & PROFD_GPU_ALL_MINORS;
	uint32_t whole = rdev | PROFD_GPU_ALL_MINORS;
	size_t i;

	for (i = 0; i < g->ndevs; i++)
		if (g->devs[i].key == rdev)
			return &g->devs[i];
	for (i = 0; i < g->ndevs; i++)
		if (g->devs[i].key == whole && minor >= g->devs[i].dev.minor_min &&
		    minor <= g->devs[i].dev.minor_max)
			return &g->devs[i];
	return NULL;
}

/* The fentry/fexit programs (bpf/gpu.bpf.h) and what each serves. */
struct fentry_hook {
	struct bpf_program *prog;
	const char *fn; /* NULL: no such call here (poll on arm64) */
	bool fexit;
	bool cuda; /* CUDA library mappings, not device calls */
};

#define GPU_N_FENTRY 7
#if ARCH_HAS_SYS_POLL
#define GPU_SYS_POLL_FN ARCH_SYSCALL_FN("poll")
#else
#define GPU_SYS_POLL_FN NULL
#endif
#define GPU_N_SYS_PROGS (GPU_N_FENTRY + 2) /* and the two tracepoints */

static void fentry_hooks(struct sample_bpf *skel, struct fentry_hook out[GPU_N_FENTRY])
{
	const struct fentry_hook h[GPU_N_FENTRY] = {
		{ skel->progs.on_gpu_ioctl_enter, ARCH_SYSCALL_FN("ioctl"), false, false },
		{ skel->progs.on_gpu_ioctl_exit, ARCH_SYSCALL_FN("ioctl"), true, false },
		{ skel->progs.on_gpu_poll_enter, GPU_SYS_POLL_FN, false, false },
		{ skel->progs.on_gpu_poll_exit, GPU_SYS_POLL_FN, true, false },
		{ skel->progs.on_gpu_ppoll_enter, ARCH_SYSCALL_FN("ppoll"), false, false },
		{ skel->progs.on_gpu_ppoll_exit, ARCH_SYSCALL_FN("ppoll"), true, false },
		{ skel->progs.on_gpu_mmap_exit, ARCH_SYSCALL_FN("mmap"), true, true },
	};

	memcpy(out, h, sizeof(h));
}

static bool fentry_wanted(const struct gpu *g, const struct fentry_hook *h)
{
	if (!h->fn)
		return false;
	return h->cuda ? gpu_probes_libs(g) : g->ndevs > 0;
}

/* Can a BPF trampoline attach to the kernel function fn?  A two-insn
 * fexit program is loaded and attached for a moment: the kernel refuses
 * where trampolines are not supported (no JIT, no ftrace direct calls)
 * or fn cannot be traced, and the real programs must not be loaded then,
 * or the whole sampler object would fail to load.  0 or -errno. */
static int trampoline_attaches(const struct btf *vmlinux, const char *fn)
{
	int id = btf__find_by_name_kind(vmlinux, fn, BTF_KIND_FUNC);
	const char *step;

	return id > 0 ? kfeatures_tracing_attaches(id, BPF_TRACE_FEXIT, &step) : -ENOENT;
}

/* fentry/fexit when every function wanted takes a trampoline, else
 * uprobes on the C library (the raw tracepoints, which put every system
 * call of the machine on the kernel's traced slow path, only when asked
 * for). */
static enum gpu_hook choose_hook(const struct gpu *g, const struct fentry_hook *h)
{
	struct btf *vmlinux;
	size_t i;
	int err = 0;

	if (g->hook == GPU_HOOK_TRACEPOINT || g->hook == GPU_HOOK_UPROBE)
		return g->hook;
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		log_warn("gpu: no kernel BTF: using uprobes on the C library's ioctl and poll");
		return GPU_HOOK_UPROBE;
	}
	for (i = 0; i < GPU_N_FENTRY && !err; i++)
		if (h[i].fexit && fentry_wanted(g, &h[i]))
			err = trampoline_attaches(vmlinux, h[i].fn);
	btf__free(vmlinux);
	if (err) {
		log_warn("gpu: fexit cannot attach to %s (%s): using uprobes on the C library's "
			 "ioctl and poll",
			 h[i - 1].fn, strerror(-err));
		return GPU_HOOK_UPROBE;
	}
	return GPU_HOOK_FENTRY;
}

/* The syscall-hook programs of the sampler object. */
static size_t sys_progs(struct sample_bpf *skel, struct bpf_program *out[GPU_N_SYS_PROGS])
{
	struct fentry_hook h[GPU_N_FENTRY];
	size_t i;

	fentry_hooks(skel, h);
	for (i = 0; i < GPU_N_FENTRY; i++)
		out[i] = h[i].prog;
	out[i++] = skel->progs.on_gpu_sys_enter;
	out[i++] = skel->progs.on_gpu_sys_exit;
	return i;
}

void gpu_bpf_prepare(struct gpu *g, struct sample_bpf *skel)
{
	struct bpf_program *progs[GPU_N_SYS_PROGS + 9];
	struct fentry_hook h[GPU_N_FENTRY];
	size_t i, n = sys_progs(skel, progs);

	/* Nothing loads unless chosen below; gpu_attach() attaches the
	 * syscall hooks, gpu_uprobe.c the uprobes per library file. */
	progs[n++] = skel->progs.on_cuda_enter;
	progs[n++] = skel->progs.on_cuda_return;
	progs[n++] = skel->progs.on_cuda_name_enter;
	progs[n++] = skel->progs.on_cuda_name_return;
	progs[n++] = skel->progs.on_comm_enter;
	progs[n++] = skel->progs.on_comm_return;
	progs[n++] = skel->progs.on_gpu_libc_enter;
	progs[n++] = skel->progs.on_gpu_libc_return;
	progs[n++] = skel->progs.on_gpu_ldso_state;
	for (i = 0; i < n; i++) {
		bpf_program__set_autoattach(progs[i], false);
		bpf_program__set_autoload(progs[i], false);
	}
	if (!gpu_enabled(g)) {
		/* The smallest ring: one page (4, 16 or 64 KiB on arm64). */
		bpf_map__set_max_entries(skel->maps.gpu_events, (uint32_t)sysconf(_SC_PAGESIZE));
		return;
	}
	skel->rodata->gpu_watch_devices = g->ndevs > 0;
	skel->rodata->gpu_watch_cuda_libs = gpu_probes_libs(g);
	skel->rodata->gpu_watch_cuda = g->cuda;
	skel->rodata->gpu_watch_comm = g->comm;
	fentry_hooks(skel, h);
	g->hook = choose_hook(g, h);
	if (g->hook == GPU_HOOK_FENTRY) {
		for (i = 0; i < GPU_N_FENTRY; i++)
			bpf_program__set_autoload(h[i].prog, fentry_wanted(g, &h[i]));
	} else if (g->hook == GPU_HOOK_UPROBE) {
		/* attached per file by gpu_libc.c */
		bpf_program__set_autoload(skel->progs.on_gpu_libc_enter, g->ndevs > 0);
		bpf_program__set_autoload(skel->progs.on_gpu_libc_return, g->ndevs > 0);
		bpf_program__set_autoload(skel->progs.on_gpu_ldso_state, gpu_probes_libs(g));
	} else {
		bpf_program__set_autoload(skel->progs.on_gpu_sys_enter, g->ndevs > 0);
		bpf_program__set_autoload(skel->progs.on_gpu_sys_exit, true);
	}
	bpf_program__set_autoload(skel->progs.on_cuda_enter, g->cuda);
	bpf_program__set_autoload(skel->progs.on_cuda_return, g->cuda);
	bpf_program__set_autoload(skel->progs.on_cuda_name_enter, g->cuda && g->cuda_launches);
	bpf_program__set_autoload(skel->progs.on_cuda_name_return, g->cuda && g->cuda_launches);
	bpf_program__set_autoload(skel->progs.on_comm_enter, g->comm);
	bpf_program__set_autoload(skel->progs.on_comm_return, g->comm);
}

bool gpu_bpf_refused(struct gpu *g, const char *prog)
{
	if (!gpu_enabled(g))
		return false;
	if (g->cuda && !strncmp(prog, "on_cuda_", 8)) {
		log_warn("gpu: CUDA entry points are not traced: this kernel refused their "
			 "uprobe program (%s)", prog);
		g->cuda = false;
		return gpu_enabled(g);
	}
	if (g->comm && !strncmp(prog, "on_comm_", 8)) {
		log_warn("gpu: collectives are not traced: this kernel refused their uprobe "
			 "program (%s)", prog);
		g->comm = false;
		return gpu_enabled(g);
	}
	if (g->hook == GPU_HOOK_FENTRY) {
		log_warn("gpu: this kernel refused the fentry/fexit program %s: using uprobes on "
			 "the C library's ioctl and poll", prog);
		g->hook = GPU_HOOK_UPROBE;
		return true;
	}
	if (g->hook == GPU_HOOK_UPROBE) {
		log_warn("gpu: this kernel refused the uprobe program %s: using the raw syscall "
			 "tracepoints", prog);
		g->hook = GPU_HOOK_TRACEPOINT;
		return true;
	}
	return false;
}

/* Every command of every class traced: the filter is there to narrow
 * a noisy command without touching the programs. */
static int fill_cmd_filter(struct sample_bpf *skel)
{
	__u8 on = 1;
	__u32 k;

	for (k = 0; k < PROFD_GPU_CMD_FILTER_ENTRIES; k++)
		if (bpf_map__update_elem(skel->maps.gpu_cmd_filter, &k, sizeof(k), &on,
					 sizeof(on), BPF_ANY))
			return -errno;
	return 0;
}

int gpu_bpf_loaded(struct gpu *g, struct sample_bpf *skel)
{
	size_t i;
	int err;

	if (!gpu_enabled(g))
		return 0;
	for (i = 0; i < g->ndevs; i++) {
		if (bpf_map__update_elem(skel->maps.gpu_devs, &g->devs[i].key, sizeof(__u32),
					 &g->devs[i].dev, sizeof(g->devs[i].dev), BPF_ANY)) {
			err = -errno;
			log_error("gpu: filling the device map failed: %s", strerror(errno));
			return err;
		}
	}
	err = fill_cmd_filter(skel);
	if (err)
		log_error("gpu: filling the command filter failed: %s", strerror(-err));
	else
		g->skel = skel; /* attach only what was set up */
	return err;
}

static void log_devices(const struct gpu *g)
{
	size_t i;

	for (i = 0; i < g->ndevs; i++) {
		const struct gpu_device *d = &g->devs[i];

		if (d->path)
			log_info("gpu: watching %s (%u:%u) as %s", d->path,
				 d->key >> PROFD_GPU_MINORBITS, d->key & PROFD_GPU_ALL_MINORS,
				 gpu_class_name(d->dev.cls));
		else
			log_info("gpu: watching major %u minors %u-%u as %s",
				 d->key >> PROFD_GPU_MINORBITS, d->dev.minor_min, d->dev.minor_max,
				 gpu_class_name(d->dev.cls));
	}
}

static void detach_sys_hooks(struct gpu *g)
{
	size_t i;

	for (i = 0; i < GPU_MAX_SYS_LINKS; i++) {
		bpf_link__destroy(g->sys_links[i]);
		g->sys_links[i] = NULL;
	}
}

/* Attach the syscall programs gpu_bpf_prepare() chose to load. */
static int attach_sys_hooks(struct gpu *g)
{
	struct bpf_program *progs[GPU_N_SYS_PROGS];
	size_t i, k = 0, n = sys_progs(g->skel, progs);

	for (i = 0; i < n; i++) {
		if (!bpf_program__autoload(progs[i]))
			continue;
		if (k == GPU_MAX_SYS_LINKS)
			return -E2BIG;
		g->sys_links[k] = bpf_program__attach(progs[i]);
		if (!g->sys_links[k++])
			return -errno;
	}
	return 0;
}

const char *gpu_hook_name(enum gpu_hook h)
{
	switch (h) {
	case GPU_HOOK_FENTRY: return "fentry";
	case GPU_HOOK_UPROBE: return "uprobe";
	case GPU_HOOK_TRACEPOINT: return "tracepoint";
	case GPU_HOOK_NONE: return "none";
	default: return "auto";
	}
}

static const char *hook_description(enum gpu_hook h)
{
	switch (h) {
	case GPU_HOOK_FENTRY: return "fentry/fexit on their kernel functions";
	case GPU_HOOK_UPROBE: return "uprobes on the C library's ioctl, poll and ppoll";
	default: return "the sys_enter/sys_exit raw tracepoints";
	}
}

int gpu_attach(struct gpu *g)
{
	int err;

	if (!gpu_enabled(g) || !g->skel)
		return 0;
	err = attach_sys_hooks(g);
	if (err) {
		log_warn("gpu: attaching the syscall %s failed: %s; GPU tracing is off",
			 gpu_hook_name(g->hook), strerror(-err));
		detach_sys_hooks(g);
		return err;
	}
	g->st.hook = g->hook;
	log_devices(g);
	if (gpu_scans_maps(g))
		gpu_uprobe_scan_all(g);
	if (g->hook == GPU_HOOK_UPROBE && g->ndevs && !g->st.libc_uprobes)
		log_warn("gpu: no C library could be probed: ioctl and poll are not traced");
	log_info("gpu: tracing %zu device entries%s%s, system calls hooked by %s", g->ndevs,
		 g->cuda ? ", CUDA entry points" : "", g->comm ? ", collectives" : "",
		 hook_description(g->hook));
	return 0;
}

struct gpu_stats *gpu_stats_mut(struct gpu *g)
{
	return &g->st;
}

static const char *const counter_names[PROFD_GPU_CNT_MAX] = {
	[PROFD_GPU_CNT_IOCTL_SEEN] = "bpf_gpu_ioctls",
	[PROFD_GPU_CNT_POLL_SEEN] = "bpf_gpu_polls",
	[PROFD_GPU_CNT_CUDA_SEEN] = "bpf_cuda_calls",
	[PROFD_GPU_CNT_CUDA_NESTED] = "bpf_cuda_nested_calls",
	[PROFD_GPU_CNT_SENT] = "bpf_gpu_events_sent",
	[PROFD_GPU_CNT_RB_FULL] = "bpf_gpu_events_dropped_ringbuf_full",
	[PROFD_GPU_CNT_INFLIGHT_FULL] = "bpf_gpu_calls_untimed_map_full",
	[PROFD_GPU_CNT_LIBMAP] = "bpf_cuda_library_mappings",
	[PROFD_GPU_CNT_NAMES] = "bpf_cuda_kernel_handle_events",
	[PROFD_GPU_CNT_COMM_SEEN] = "bpf_comm_calls",
	[PROFD_GPU_CNT_COMM_NESTED] = "bpf_comm_nested_calls",
};

const char *gpu_counter_name(int which)
{
	return which >= 0 && which < PROFD_GPU_CNT_MAX ? counter_names[which] : "?";
}

static void sum_bpf_counters(const struct gpu *g, uint64_t out[PROFD_GPU_CNT_MAX])
{
	if (g->skel)
		bpfcount_sum(bpf_map__fd(g->skel->maps.gpu_counters), PROFD_GPU_CNT_MAX, out);
}

void gpu_get_stats(const struct gpu *g, struct gpu_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!g)
		return;
	*out = g->st;
	memset(out->bpf, 0, sizeof(out->bpf));
	sum_bpf_counters(g, out->bpf);
}
