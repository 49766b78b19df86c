/* gpu_int.h: the state gpu.c and gpu_uprobe.c share. */
#ifndef PROFD_GPU_INT_H
#define PROFD_GPU_INT_H

#include "gpu.h"
#include "hashmap.h"

#define GPU_MAX_DEVICES 64
#define GPU_MAX_SYS_LINKS 8

struct bpf_link;

struct gpu {
	enum gpu_mode mode;
	bool cuda;                /* CUDA uprobes wanted */
	bool cuda_launches;       /* launches too (each costs two uprobe traps) */
	bool comm;                /* communication-library uprobes wanted (MPI, c10d, NCCL) */
	struct gpu_device *devs;
	size_t ndevs;
	char *proc_root;
	struct sample_bpf *skel;  /* set once loaded */
	enum gpu_hook hook;       /* asked for, then chosen before load */
	struct bpf_link *sys_links[GPU_MAX_SYS_LINKS]; /* the syscall hooks */
	struct hashmap files;     /* hash(dev, inode) of library files seen */
	struct bpf_link **links;  /* uprobes */
	size_t nlinks;
	struct gpu_stats st;
};

struct elfsym;
struct procmap;

/* Does any library mapping want probes (CUDA libraries, or the C
 * libraries under the uprobe hook)? */
static inline bool gpu_scans_maps(const struct gpu *g)
{
	return g->cuda || g->comm || g->hook == GPU_HOOK_UPROBE;
}

/* Are library entry points probed (CUDA's, the collectives')?  Their
 * mappings are then watched: mmap, or the loader's _dl_debug_state. */
static inline bool gpu_probes_libs(const struct gpu *g)
{
	return g->cuda || g->comm;
}

/* gpu_uprobe.c */
int gpu_uprobe_scan_all(struct gpu *g);
void gpu_uprobe_free(struct gpu *g);
struct elfsym *gpu_open_mapped(struct gpu *g, uint32_t pid, const struct procmap *pm, int *fd,
			       char *fdpath, size_t len);
void gpu_close_mapped(struct elfsym *es, int fd);
bool gpu_file_seen(struct gpu *g, const struct procmap *pm, uint64_t *key);
int gpu_keep_link(struct gpu *g, struct bpf_link *link);

/* gpu_libc.c: the uprobe hook's probes on one mapped file: ioctl, poll
 * and ppoll of a C library, _dl_debug_state of a dynamic loader (CUDA
 * mode).  0 when probed (or tried), 1 when the file is neither. */
int gpu_libc_attach(struct gpu *g, uint32_t pid, const struct procmap *pm);

#endif
