#include "sockperm.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define GROUP_BUF_MAX (1u << 20)

/* 1 and *gid when the group exists, 0 when it does not, -errno when the
 * lookup failed (a broken NSS source is not "no such group"). */
static int lookup_group(const char *name, gid_t *gid)
{
	struct group gr, *res = NULL;
	size_t size = 4096;
	char *buf = NULL;
	int err;

	for (;;) {
		char *nb = realloc(buf, size);

		if (!nb) {
			free(buf);
			return -ENOMEM;
		}
		buf = nb;
		err = getgrnam_r(name, &gr, buf, size, &res);
		if (err != ERANGE || size >= GROUP_BUF_MAX)
			break;
		size *= 2; /* a group with many members */
	}
	if (res)
		*gid = res->gr_gid;
	free(buf);
	if (res)
		return 1;
	/* glibc reports "not found" as 0; these are the other spellings
	 * getgrnam_r(3) lists for it. */
	if (err == 0 || err == ENOENT || err == ESRCH || err == EBADF || err == EPERM)
		return 0;
	return -err;
}

/* chmod through our O_PATH descriptor, so a path swapped after the check
 * cannot redirect it; /proc missing is the only reason to use the path. */
static int chmod_fd(int fd, const char *path, mode_t mode)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	if (chmod(p, mode) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	return chmod(path, mode) ? -errno : 0;
}

int sockperm_apply(const char *path, const char *group)
{
	struct stat st;
	gid_t gid = 0;
	int fd, found, err = 0;

	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		log_error("control: %s: %s", path, strerror(errno));
		return err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		log_error("control: %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISSOCK(st.st_mode)) {
		err = -ENOTSOCK;
		log_error("control: %s is not a socket", path);
		goto out;
	}
	found = lookup_group(group, &gid);
	if (found == 0) {
		/* Never 0666: which users may reach a root daemon is the
		 * administrator's choice, made by creating the group. */
		err = chmod_fd(fd, path, 0600);
		if (!err)
			log_warn("control: no group '%s': socket %s is 0600, root only (create the "
				 "group and add users to it to let them connect)",
				 group, path);
		goto out;
	}
	err = found < 0 ? found : 0;
	if (!err && fchownat(fd, "", (uid_t)-1, gid, AT_EMPTY_PATH))
		err = -errno;
	if (!err)
		err = chmod_fd(fd, path, 0660);
	if (!err) {
		log_info("control: socket %s is 0660, group %s", path, group);
		goto out;
	}
	log_error("control: cannot give socket %s to group '%s': %s; left 0600 (owner only)",
		  path, group, strerror(-err));
	chmod_fd(fd, path, 0600);
out:
	close(fd);
	return err;
}

int control_socket_perms(const char *path)
{
	return sockperm_apply(path, SOCKPERM_GROUP);
}
