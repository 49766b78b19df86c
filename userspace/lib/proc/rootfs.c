#include "rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "log.h"

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

/* RESOLVE_IN_ROOT makes "/" and ".." inside the walk stop at root, so an
 * absolute symlink planted by the process stays in its own tree;
 * RESOLVE_NO_MAGICLINKS refuses /proc/self/fd-style links inside it.
 * -ENOSYS when the kernel (or a seccomp filter) lacks openat2: the
 * caller fails closed. */
static int open_in_root(const char *root, const char *path)
{
	struct open_how how = {
	    .flags = OPEN_FLAGS,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int dirfd, fd, tries;

	dirfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	while (*path == '/')
		path++;
	if (!*path)
		path = ".";
	/* EAGAIN means a concurrent rename raced the walk: retry a little. */
	for (tries = 0; tries < 3; tries++) {
		fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	if (fd < 0)
		fd = -errno;
	close(dirfd);
	return fd;
}

static bool same_file(const struct stat *st, const struct procfile_id *want)
{
	return st->st_ino == want->inode && major(st->st_dev) == want->dev_major &&
	       minor(st->st_dev) == want->dev_minor;
}

/* Keep fd only if it is a regular file (and the wanted one). */
static int check_fd(int fd, const struct procfile_id *want)
{
	struct stat st;
	int err = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EINVAL;
	else if (want && !same_file(&st, want))
		err = -ESTALE;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int procfile_open(const char *root, const char *path, const struct procfile_id *want)
{
	static bool warned;
	int fd;

	if (!root || !*root || !path || !*path)
		return -EINVAL;
	fd = open_in_root(root, path);
	if (fd == -ENOSYS && !warned) {
		warned = true;
		log_warn("rootfs: openat2 is unavailable: files of profiled processes are not "
			 "opened (no symbols, unwind tables or Python support from them)");
	}
	return check_fd(fd, want);
}

static int open_plain(const char *path)
{
	int fd = open(path, OPEN_FLAGS);

	return fd < 0 ? -errno : fd;
}

/* map_files/ is a magic link the kernel points at the mapped file itself,
 * so the process has no say in where it leads (its identity is not
 * compared: on overlayfs the maps line shows the backing inode and fstat
 * the overlay's).  It needs CAP_SYS_ADMIN. */
static int open_map_files(const char *proc_root, int pid, uint64_t start, uint64_t end)
{
	char p[PATH_MAX];
	int n;

	n = snprintf(p, sizeof(p), "%s/%d/map_files/%" PRIx64 "-%" PRIx64, proc_root, pid, start,
		     end);
	if (n < 0 || (size_t)n >= sizeof(p))
		return -ENAMETOOLONG;
	return check_fd(open_plain(p), NULL);
}

/* The same file (device and inode) where the process maps it now.  A
 * range read a moment earlier is gone when the dynamic loader was still
 * mapping the library (it maps the whole file, then its segments over
 * that): a report made at dlopen races it.  Seen on arm64, whose
 * 64 KiB-aligned segments leave the loader more to redo. */
static int open_map_files_again(const char *proc_root, int pid, const struct procmap *m)
{
	struct procmaps maps;
	size_t i;
	int fd = -ENOENT;

	if (procmaps_read_at(proc_root, pid, &maps))
		return -ENOENT;
	for (i = 0; i < maps.n && fd == -ENOENT; i++) {
		const struct procmap *o = &maps.maps[i];

		if (o->inode == m->inode && o->dev_major == m->dev_major &&
		    o->dev_minor == m->dev_minor)
			fd = open_map_files(proc_root, pid, o->start, o->end);
	}
	procmaps_free(&maps);
	return fd;
}

int procfile_open_mapped(const char *proc_root, int pid, const struct procmap *m)
{
	struct procfile_id want = {m->dev_major, m->dev_minor, m->inode};
	char p[PATH_MAX];
	int fd, n;

	fd = open_map_files(proc_root, pid, m->start, m->end);
	if (fd == -ENOENT && m->inode)
		fd = open_map_files_again(proc_root, pid, m);
	if (fd >= 0 || fd == -EINVAL)
		return fd;
	if (m->path[0] != '/')
		return -ENOENT;
	n = snprintf(p, sizeof(p), "%s/%d/root", proc_root, pid);
	if (n < 0 || (size_t)n >= sizeof(p))
		return -ENAMETOOLONG;
	return procfile_open(p, m->path, &want);
}

int procfile_open_mapped_path(const char *proc_root, int pid, const char *path)
{
	struct procmaps maps;
	size_t i;
	int err;

	err = procmaps_read_at(proc_root, pid, &maps);
	if (err)
		return err;
	err = -ENOENT;
	for (i = 0; i < maps.n; i++) {
		if (maps.maps[i].inode && !strcmp(maps.maps[i].path, path)) {
			err = procfile_open_mapped(proc_root, pid, &maps.maps[i]);
			break;
		}
	}
	procmaps_free(&maps);
	return err;
}

void procfile_fd_path(int fd, char *buf, size_t size)
{
	snprintf(buf, size, "/proc/self/fd/%d", fd);
}

int rootfs_open(const char *root, const char *path)
{
	if (!path || !*path)
		return -EINVAL;
	if (root && *root)
		return procfile_open(root, path, NULL);
	return check_fd(open_plain(path), NULL);
}

int rootfs_read_fd(int fd, size_t max, char **data, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *p = malloc(cap), *q;

	if (!p)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			if (cap > max) {
				free(p);
				return -EFBIG;
			}
			cap *= 2;
			q = realloc(p, cap);
			if (!q) {
				free(p);
				return -ENOMEM;
			}
			p = q;
		}
		r = read(fd, p + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			free(p);
			return (int)r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			free(p);
			return -EFBIG;
		}
	}
	p[n] = '\0';
	*data = p;
	*len = n;
	return 0;
}

int rootfs_read_file(const char *root, const char *path, size_t max, char **data, size_t *len)
{
	int fd = rootfs_open(root, path), err;

	if (fd < 0)
		return fd;
	err = rootfs_read_fd(fd, max, data, len);
	close(fd);
	return err;
}
