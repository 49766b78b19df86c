/* gpu_libc.c: the uprobe hook, for kernels that refuse BPF trampolines.
 * Instead of the raw syscall tracepoints (which put every system call of
 * the machine on the kernel's traced slow path), uprobes on the C
 * library's ioctl, poll and ppoll: a uprobe belongs to the file (inode),
 * so probing each libc file once covers every process that maps it, and
 * only threads that call these three functions trap (about a microsecond
 * each, entry and return).  The device filter stays in BPF.
 *
 * What this cannot see: calls that do not go through a probed C library
 * function (static binaries, Go programs and others issuing the syscall
 * instruction themselves, a libc file no process showed profd yet).
 *
 * In CUDA mode the dynamic loader's _dl_debug_state is probed too: it
 * runs whenever the loader changed the set of mapped libraries, and
 * stands in for the mmap hook, which only fexit or the tracepoints give. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "elfsym.h"
#include "gpu_int.h"
#include "log.h"
#include "procmaps.h"
#include "sample.skel.h"

/* The functions probed, aliases included: a name is probed only if its
 * address is not probed already (glibc's poll and __poll are one). */
static const struct libc_fn {
	const char *name;
	uint32_t src; /* the cookie: PROFD_GPU_SRC_IOCTL or _POLL */
} libc_fns[] = {
	{ "ioctl", PROFD_GPU_SRC_IOCTL }, { "__ioctl", PROFD_GPU_SRC_IOCTL },
	{ "poll", PROFD_GPU_SRC_POLL },   { "__poll", PROFD_GPU_SRC_POLL },
	{ "ppoll", PROFD_GPU_SRC_POLL },  { "__ppoll", PROFD_GPU_SRC_POLL },
};

#define LIBC_N_FNS (sizeof(libc_fns) / sizeof(libc_fns[0]))

static int attach_one(struct gpu *g, struct bpf_program *prog, const char *fdpath,
		      const char *name, uint64_t cookie, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = name, .bpf_cookie = cookie, .retprobe = ret);
	struct bpf_link *link = bpf_program__attach_uprobe_opts(prog, -1, fdpath, 0, &uo);

	if (!link) {
		g->st.libc_failures++;
		return -errno;
	}
	if (gpu_keep_link(g, link))
		return -ENOMEM;
	g->st.libc_uprobes++;
	return 0;
}

static bool addr_probed(const uint64_t *done, size_t n, uint64_t addr)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (done[i] == addr)
			return true;
	return false;
}

/* ioctl/poll/ppoll entry and return probes; the number of functions. */
static unsigned attach_c(struct gpu *g, const struct elfsym *es, const char *fdpath,
			 const char *path)
{
	uint64_t done[LIBC_N_FNS], addr, size;
	size_t i, n = 0;
	int err;

	for (i = 0; i < LIBC_N_FNS; i++) {
		if (elfsym_lookup_symbol(es, libc_fns[i].name, &addr, &size) ||
		    addr_probed(done, n, addr))
			continue;
		done[n++] = addr;
		err = attach_one(g, g->skel->progs.on_gpu_libc_enter, fdpath, libc_fns[i].name,
				 libc_fns[i].src, false);
		if (!err)
			err = attach_one(g, g->skel->progs.on_gpu_libc_return, fdpath,
					 libc_fns[i].name, 0, true);
		if (err)
			log_warn("gpu: uprobe on %s in %s failed: %s", libc_fns[i].name, path,
				 strerror(-err));
	}
	return (unsigned)n;
}

int gpu_libc_attach(struct gpu *g, uint32_t pid, const struct procmap *pm)
{
	unsigned kind = procmaps_libc_kind(pm->path);
	uint64_t addr, size;
	char fdpath[64];
	struct elfsym *es;
	unsigned n = 0;
	int fd;

	/* probes on the C library for devices, on the loader for CUDA */
	if (!g->ndevs)
		kind &= ~(unsigned)PROCMAPS_LIBC_C;
	if (!gpu_probes_libs(g))
		kind &= ~(unsigned)PROCMAPS_LIBC_LOADER;
	if (!kind)
		return 1;
	es = gpu_open_mapped(g, pid, pm, &fd, fdpath, sizeof(fdpath));
	if (!es)
		return -EIO;
	if (kind & PROCMAPS_LIBC_C)
		n = attach_c(g, es, fdpath, pm->path);
	if ((kind & PROCMAPS_LIBC_LOADER) && elfsym_lookup_symbol(es, "_dl_debug_state", &addr, &size) == 0 &&
	    attach_one(g, g->skel->progs.on_gpu_ldso_state, fdpath, "_dl_debug_state", 0,
		       false) == 0)
		n++;
	gpu_close_mapped(es, fd);
	g->st.libc_files++;
	log_info("gpu: %u functions probed in %s of pid %u", n, pm->path, pid);
	return 0;
}
