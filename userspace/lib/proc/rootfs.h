/* rootfs: the one way profd opens a file that a profiled process names
 * (its executable and libraries, debug files, perf maps, CUDA
 * libraries).  The process controls those paths and the files behind
 * them, and profd is root, so every open here:
 *   - resolves inside the process's root with openat2(RESOLVE_IN_ROOT |
 *     RESOLVE_NO_MAGICLINKS): an absolute symlink or ".." planted by the
 *     process stays in its own tree (a container cannot point us at the
 *     host's /etc/shadow).  Without openat2 (ENOSYS: old kernel, seccomp)
 *     it fails closed; it never falls back to joining strings;
 *   - opens O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, so a FIFO or a
 *     tty cannot block or adopt us, and keeps only regular files;
 *   - checks the identity (device, inode) against the mapping when the
 *     caller knows it, so a path swapped after /proc/PID/maps was read
 *     yields an error, never another file. */
#ifndef PROFD_ROOTFS_H
#define PROFD_ROOTFS_H

#include <stddef.h>
#include <stdint.h>

#include "procmaps.h"

/* Device and inode a file must have, as /proc/PID/maps shows them. */
struct procfile_id {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
};

/* Open path as seen from root (a directory such as /proc/PID/root).
 * want (may be NULL) is the identity it must have: -ESTALE otherwise.
 * -EINVAL when not a regular file, -ENOSYS without openat2, else the
 * open's -errno.  Returns an fd (O_CLOEXEC). */
int procfile_open(const char *root, const char *path, const struct procfile_id *want);
/* The file behind mapping m of pid: <proc_root>/<pid>/map_files/ (the
 * mapped file itself, deleted or in another mount namespace; root
 * only), else m->path inside <proc_root>/<pid>/root with m's identity
 * checked.  An fd or -errno as procfile_open. */
int procfile_open_mapped(const char *proc_root, int pid, const struct procmap *m);
/* The same for the first file mapping of pid whose path is path (for a
 * caller that kept only the path).  -ENOENT when pid maps no such file. */
int procfile_open_mapped_path(const char *proc_root, int pid, const char *path);
/* "/proc/self/fd/N" for fd, for APIs that take a path (uprobes): the
 * kernel resolves it to the very file fd is open on, never to whatever
 * the original path names by then. */
void procfile_fd_path(int fd, char *buf, size_t size);

/* Files profd trusts (its own /proc reads, kallsyms): path as is, or
 * inside root with procfile_open's rules when root is not NULL or "". */
int rootfs_open(const char *root, const char *path);
/* Read all of fd from its current position, at most max bytes (-EFBIG
 * beyond).  Works on /proc files that report size 0.  *data is
 * NUL-terminated and must be freed.  0 or -errno. */
int rootfs_read_fd(int fd, size_t max, char **data, size_t *len);
/* rootfs_open + rootfs_read_fd. */
int rootfs_read_file(const char *root, const char *path, size_t max, char **data, size_t *len);

#endif
