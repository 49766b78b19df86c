/* gpu_uprobe.c: uprobes on the CUDA API and on the blocking calls of
 * communication libraries (MPI, c10d, NCCL), attached once per library file.
 * A uprobe belongs to the file (inode), not to a process, so the first
 * process that maps a given libcuda.so/libcudart.so brings the probes for
 * every later one.  Processes are looked at when profd starts, when BPF
 * reports an executable mapping of a CUDA library, and when ingest sees a
 * new process or reloads its maps.  Only the named entry points are
 * probed, never every driver function. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsym.h"
#include "gpu_int.h"
#include "log.h"
#include "procmaps.h"
#include "rootfs.h"
#include "sample.skel.h"

enum probed_lib { LIB_NONE = -1, LIB_DRIVER = 0, LIB_RUNTIME = 1, LIB_COMM = 2 };

/* libcuda.so* is the driver API, libcudart.so* the runtime API; MPI
 * (Open MPI's libmpi.so.40, MPICH's libmpi.so.12 and libmpich.so.12),
 * NCCL and PyTorch's c10d (in libtorch_cpu) are communication. */
static int lib_kind(const struct gpu *g, const char *path)
{
	static const char *const comm[] = { "libmpi.so", "libmpich.so", "libnccl.so",
					    "libtorch_cpu.so" };
	const char *base = strrchr(path, '/');
	size_t i;

	base = base ? base + 1 : path;
	if (g->cuda && strncmp(base, "libcudart.so", 12) == 0)
		return LIB_RUNTIME;
	if (g->cuda && strncmp(base, "libcuda.so", 10) == 0)
		return LIB_DRIVER;
	for (i = 0; g->comm && i < sizeof(comm) / sizeof(comm[0]); i++)
		if (strncmp(base, comm[i], strlen(comm[i])) == 0)
			return LIB_COMM;
	return LIB_NONE;
}

int gpu_keep_link(struct gpu *g, struct bpf_link *link)
{
	struct bpf_link **links = realloc(g->links, (g->nlinks + 1) * sizeof(*links));

	if (!links) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	g->links = links;
	g->links[g->nlinks++] = link;
	return 0;
}

/* Entry and return probe on one function; the cookie says which.  path
 * is /proc/self/fd/N of the descriptor that was checked, off the
 * function's file offset (found once in our symbol table: libbpf would
 * read the library's ELF again for each name). */
static int attach_fn(struct gpu *g, const char *path, const char *name, const char *sym,
		     uint64_t off, uint32_t fn, struct bpf_program *on_entry,
		     struct bpf_program *on_return)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = fn);
	struct bpf_link *entry, *ret;

	entry = bpf_program__attach_uprobe_opts(on_entry, -1, path, off, &uo);
	if (!entry)
		goto fail;
	uo.retprobe = true;
	ret = bpf_program__attach_uprobe_opts(on_return, -1, path, off, &uo);
	if (!ret) {
		bpf_link__destroy(entry);
		goto fail;
	}
	if (gpu_keep_link(g, entry) || gpu_keep_link(g, ret))
		return -ENOMEM;
	g->st.uprobes += 2;
	return 0;
fail:
	g->st.uprobe_failures++;
	log_warn("gpu: uprobe on %s in %s failed: %s", sym, name, strerror(errno));
	return -errno;
}

/* The mapped file pm of pid, opened and checked (procfile_open_mapped)
 * and read as ELF; *fd stays open for the attach through fdpath
 * (/proc/self/fd/N): the process cannot swap the path between the check
 * and the attach to plant probes in another binary.  NULL on failure. */
struct elfsym *gpu_open_mapped(struct gpu *g, uint32_t pid, const struct procmap *pm, int *fd,
			       char *fdpath, size_t len)
{
	char root[PATH_MAX];
	struct elfsym *es;

	*fd = procfile_open_mapped(g->proc_root, (int)pid, pm);
	if (*fd < 0) {
		log_warn("gpu: cannot open %s of pid %u: %s", pm->path, pid, strerror(-*fd));
		return NULL;
	}
	snprintf(root, sizeof(root), "%s/%u/root", g->proc_root, pid);
	es = elfsym_open_fd(*fd, pm->path, root);
	if (!es) {
		log_warn("gpu: cannot read %s: %s", pm->path, strerror(errno));
		close(*fd);
		return NULL;
	}
	procfile_fd_path(*fd, fdpath, len);
	return es;
}

void gpu_close_mapped(struct elfsym *es, int fd)
{
	elfsym_free(es);
	close(fd); /* a uprobe holds its inode, not our descriptor */
}

/* The file offset of an exported function; false when the file has no
 * such symbol (or it lies outside the file), or another name already
 * probed sits there (an alias: two probes would trap twice a call). */
static bool fn_offset(const struct elfsym *es, const char *sym, uint64_t *done, uint32_t ndone,
		      uint64_t *off)
{
	uint64_t addr, size;
	uint32_t i;

	if (elfsym_lookup_symbol(es, sym, &addr, &size) || elfsym_vaddr_to_offset(es, addr, off))
		return false;
	for (i = 0; i < ndone; i++)
		if (done[i] == *off)
			return false;
	return true;
}

/* Probe every CUDA entry point of the library's kind that the file
 * exports (checked first, so a missing one is not an error). */
static uint32_t attach_cuda(struct gpu *g, const struct elfsym *es, const char *fdpath,
			    const char *path, int kind)
{
	uint64_t done[PROFD_CUDA_FN_MAX], off;
	uint32_t fn, n = 0;

	for (fn = 1; fn < PROFD_CUDA_FN_MAX; fn++) {
		const char *sym = gpu_cuda_fn_name(fn);
		bool names = gpu_cuda_fn_names(fn); /* handles made: names, not time */

		/* Handles are probed for the names of launches: with them. */
		if (gpu_cuda_fn_runtime(fn) != kind ||
		    ((gpu_cuda_fn_launch(fn) || names) && !g->cuda_launches) ||
		    !fn_offset(es, sym, done, n, &off))
			continue;
		if (attach_fn(g, fdpath, path, sym, off, fn,
			      names ? g->skel->progs.on_cuda_name_enter : g->skel->progs.on_cuda_enter,
			      names ? g->skel->progs.on_cuda_name_return
				    : g->skel->progs.on_cuda_return) == 0)
			done[n++] = off;
	}
	return n;
}

/* Probe every blocking communication call the file exports. */
static uint32_t attach_comm(struct gpu *g, const struct elfsym *es, const char *fdpath,
			    const char *path)
{
	uint64_t done[PROFD_COMM_FN_MAX], off;
	uint32_t fn, n = 0;

	for (fn = 1; fn < PROFD_COMM_FN_MAX; fn++) {
		const char *sym = gpu_comm_fn_symbol(fn);

		if (!fn_offset(es, sym, done, n, &off))
			continue;
		if (attach_fn(g, fdpath, path, sym, off, fn, g->skel->progs.on_comm_enter,
			      g->skel->progs.on_comm_return) == 0)
			done[n++] = off;
	}
	return n;
}

static int attach_lib(struct gpu *g, uint32_t pid, const struct procmap *pm, int kind)
{
	char fdpath[64];
	struct elfsym *es;
	uint32_t n;
	bool comm;
	int fd;

	es = gpu_open_mapped(g, pid, pm, &fd, fdpath, sizeof(fdpath));
	if (!es)
		return -EIO;
	comm = kind == LIB_COMM;
	n = comm ? attach_comm(g, es, fdpath, pm->path) : attach_cuda(g, es, fdpath, pm->path, kind);
	gpu_close_mapped(es, fd);
	if (comm)
		g->st.comm_files++;
	else
		g->st.uprobe_files++;
	log_info("gpu: %u %s entry points probed in %s of pid %u", n, comm ? "communication" : "CUDA",
		 pm->path, pid);
	return 0;
}

/* Once per file: hash(dev, inode) of the files already probed. */
bool gpu_file_seen(struct gpu *g, const struct procmap *pm, uint64_t *key)
{
	*key = hash64_mix(((uint64_t)pm->dev_major << 44) ^ ((uint64_t)pm->dev_minor << 32) ^
			  pm->inode);
	return hashmap_get(&g->files, *key, NULL);
}

/* Attach what a mapping wants, once per file: the CUDA entry points of
 * libcuda/libcudart, the collectives of MPI, NCCL and c10d, the uprobe
 * hook's probes on the C library and the dynamic loader (gpu_libc.c).
 * 0, or 1 when pm is nothing of these. */
static int scan_mapping(struct gpu *g, uint32_t pid, const struct procmap *pm)
{
	int kind = lib_kind(g, pm->path);

	if (kind != LIB_NONE)
		return attach_lib(g, pid, pm, kind);
	if (g->hook == GPU_HOOK_UPROBE)
		return gpu_libc_attach(g, pid, pm);
	return 1;
}

int gpu_scan_maps(struct gpu *g, uint32_t pid, const struct procmaps *m)
{
	size_t i;

	if (!g || !g->skel || !gpu_scans_maps(g))
		return 0;
	for (i = 0; i < m->n; i++) {
		const struct procmap *pm = &m->maps[i];
		uint64_t key;

		if (!(pm->prot & 4 /* PROT_EXEC */) || pm->deleted || gpu_file_seen(g, pm, &key))
			continue;
		/* Through the process's root: containers have their own.
		 * A file that could not be read (the process is gone) is
		 * tried again with the next process that maps it. */
		if (scan_mapping(g, pid, pm) == 0 && hashmap_put(&g->files, key, 1))
			return -ENOMEM;
	}
	return 0;
}

int gpu_scan_process(struct gpu *g, uint32_t pid)
{
	struct procmaps m = { 0 };
	int err;

	if (!g || !g->skel || !gpu_scans_maps(g))
		return 0;
	err = procmaps_read_at(g->proc_root, (int)pid, &m);
	if (err)
		return err;
	err = gpu_scan_maps(g, pid, &m);
	procmaps_free(&m);
	return err;
}

static int scan_one(void *ctx, uint32_t pid)
{
	gpu_scan_process(ctx, pid);
	return 0;
}

/* At start: every running process, for the libraries it already maps. */
int gpu_uprobe_scan_all(struct gpu *g)
{
	return proc_for_each_pid(g->proc_root, scan_one, g);
}

void gpu_uprobe_free(struct gpu *g)
{
	size_t i;

	for (i = 0; i < g->nlinks; i++)
		bpf_link__destroy(g->links[i]);
	free(g->links);
	g->links = NULL;
	g->nlinks = 0;
	hashmap_free(&g->files);
}
