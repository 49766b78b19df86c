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

/* gpu_uprobe.c */
int gpu_uprobe_scan_all(struct gpu *g);
void gpu_uprobe_free(struct gpu *g);

#endif
