#include "rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

static int open_plain(const char *root, const char *path)
{
	char full[PATH_MAX];
	int n, fd;

	n = snprintf(full, sizeof(full), "%s%s%s", root, path[0] == '/' ? "" : "/", path);
	if (n < 0 || (size_t)n >= sizeof(full))
		return -ENAMETOOLONG;
	fd = open(full, OPEN_FLAGS);
	return fd < 0 ? -errno : fd;
}

/* RESOLVE_IN_ROOT makes "/" and ".." inside the walk stop at root, so an
 * absolute symlink planted by the process stays in its own tree.  Returns
 * -ENOSYS when the kernel (or a seccomp filter) lacks openat2. */
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

int rootfs_open(const char *root, const char *path)
{
	static int have_openat2 = 1;
	struct stat st;
	int fd;

	if (!path || !*path)
		return -EINVAL;
	if (!root || !*root) {
		fd = open(path, OPEN_FLAGS);
		fd = fd < 0 ? -errno : fd;
	} else {
		fd = have_openat2 ? open_in_root(root, path) : -ENOSYS;
		if (fd == -ENOSYS) {
			if (have_openat2)
				log_debug("rootfs: openat2 unavailable, resolving %s by concatenation", root);
			have_openat2 = 0;
			fd = open_plain(root, path);
		}
	}
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
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
