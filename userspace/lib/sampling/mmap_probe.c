/* mmap_probe.c: uprobes on the C library's mapping calls, one set per
 * library file (mmap_probe.h).  Only mmap, munmap, mremap and brk are
 * probed: glibc's sbrk calls brk, and malloc calls these very functions
 * (their internal aliases share the code), so a probe on each sees every
 * call the C library makes, from the program or from malloc. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsym.h"
#include "hashmap.h"
#include "log.h"
#include "mmap_probe.h"
#include "procmaps.h"
#include "profd_abi.h"
#include "rootfs.h"

struct mmap_probe {
	struct bpf_program *prog;
	const char *proc_root;
	struct hashmap files; /* hash(dev, ino) of the files probed */
	struct bpf_link **links;
	size_t nlinks;
	uint64_t nfiles;
};

static const char *const fn_names[PROFD_MMAP_FN_MAX] = {
	[PROFD_MMAP_FN_MMAP] = "mmap",
	[PROFD_MMAP_FN_MUNMAP] = "munmap",
	[PROFD_MMAP_FN_MREMAP] = "mremap",
	[PROFD_MMAP_FN_BRK] = "brk",
};

struct mmap_probe *mmap_probe_new(struct bpf_program *prog, const char *proc_root)
{
	struct mmap_probe *mp = calloc(1, sizeof(*mp));

	if (!mp)
		return NULL;
	mp->prog = prog;
	mp->proc_root = proc_root;
	hashmap_init(&mp->files);
	return mp;
}

void mmap_probe_free(struct mmap_probe *mp)
{
	size_t i;

	if (!mp)
		return;
	for (i = 0; i < mp->nlinks; i++)
		bpf_link__destroy(mp->links[i]);
	free(mp->links);
	hashmap_free(&mp->files);
	free(mp);
}

static int keep_link(struct mmap_probe *mp, struct bpf_link *link)
{
	struct bpf_link **links = realloc(mp->links, (mp->nlinks + 1) * sizeof(*links));

	if (!links) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	mp->links = links;
	mp->links[mp->nlinks++] = link;
	return 0;
}

/* Every mapping function the file exports, checked first so a missing
 * one (musl has no mremap before 1.1.x) is not an error.  The probes go on
 * the file procfile_open_mapped checked, through /proc/self/fd/N: the
 * process cannot swap the path between the check and the attach. */
static int attach_lib(struct mmap_probe *mp, uint32_t pid, const struct procmap *pm)
{
	char root[PATH_MAX], fdpath[64];
	uint64_t addr, size;
	struct elfsym *es;
	uint32_t fn, n = 0;
	int fd, err = 0;

	fd = procfile_open_mapped(mp->proc_root, (int)pid, pm);
	if (fd < 0)
		return fd; /* gone: tried again with the next process */
	snprintf(root, sizeof(root), "%s/%u/root", mp->proc_root, pid);
	es = elfsym_open_fd(fd, pm->path, root);
	if (!es) {
		err = -errno;
		close(fd);
		return err;
	}
	procfile_fd_path(fd, fdpath, sizeof(fdpath));
	for (fn = 1; fn < PROFD_MMAP_FN_MAX && !err; fn++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = fn_names[fn], .bpf_cookie = fn);
		struct bpf_link *link;

		if (elfsym_lookup_symbol(es, fn_names[fn], &addr, &size))
			continue;
		link = bpf_program__attach_uprobe_opts(mp->prog, -1, fdpath, 0, &uo);
		if (!link) {
			log_warn("mmap: uprobe on %s in %s failed: %s", fn_names[fn], pm->path,
				 strerror(errno));
			continue;
		}
		err = keep_link(mp, link);
		n += !err;
	}
	elfsym_free(es);
	close(fd); /* a uprobe holds its inode, not our descriptor */
	mp->nfiles++;
	log_info("mmap: %u mapping functions probed in %s of pid %u", n, pm->path, pid);
	return err;
}

int mmap_probe_scan_maps(struct mmap_probe *mp, uint32_t pid, const struct procmaps *m)
{
	size_t i;

	if (!mp)
		return 0;
	for (i = 0; i < m->n; i++) {
		const struct procmap *pm = &m->maps[i];
		uint64_t key;
		int err;

		if (!(pm->prot & 4 /* PROT_EXEC */) || pm->deleted || !(procmaps_libc_kind(pm->path) & PROCMAPS_LIBC_C))
			continue;
		key = hash64_mix(((uint64_t)pm->dev_major << 44) ^ ((uint64_t)pm->dev_minor << 32) ^
				 pm->inode);
		if (hashmap_get(&mp->files, key, NULL))
			continue;
		err = attach_lib(mp, pid, pm);
		if (err == -ENOMEM)
			return err;
		if (!err && hashmap_put(&mp->files, key, 1))
			return -ENOMEM;
	}
	return 0;
}

static int scan_process(void *ctx, uint32_t pid)
{
	struct mmap_probe *mp = ctx;
	struct procmaps m = { 0 };
	int err = procmaps_read_at(mp->proc_root, (int)pid, &m);

	if (err)
		return err;
	err = mmap_probe_scan_maps(mp, pid, &m);
	procmaps_free(&m);
	return err;
}

int mmap_probe_scan_all(struct mmap_probe *mp)
{
	return proc_for_each_pid(mp->proc_root, scan_process, mp);
}

void mmap_probe_counts(const struct mmap_probe *mp, uint64_t *files, uint64_t *uprobes)
{
	*files = mp ? mp->nfiles : 0;
	*uprobes = mp ? mp->nlinks : 0;
}
