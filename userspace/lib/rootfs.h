/* rootfs: open files the way a profiled process sees them, under its
 * /proc/PID/root, without letting that process's symlinks escape into
 * the host's file system (a container could point an absolute symlink
 * at /etc/shadow). */
#ifndef PROFD_ROOTFS_H
#define PROFD_ROOTFS_H

#include <stddef.h>

/* Open path read-only as seen from root ("" or NULL: the host root).
 * Only regular files are accepted (a FIFO must never block us).
 * Returns an fd (O_CLOEXEC) or -errno. */
int rootfs_open(const char *root, const char *path);
/* Read all of fd from its current position, at most max bytes (-EFBIG
 * beyond).  Works on /proc files that report size 0.  *data is
 * NUL-terminated and must be freed.  0 or -errno. */
int rootfs_read_fd(int fd, size_t max, char **data, size_t *len);
/* rootfs_open + rootfs_read_fd. */
int rootfs_read_file(const char *root, const char *path, size_t max, char **data, size_t *len);

#endif
