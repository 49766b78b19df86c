#include "sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sdnotify_send(const char *state)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *name = getenv("NOTIFY_SOCKET");
	size_t len, slen;
	socklen_t alen;
	ssize_t n;
	int fd, err = 0;

	if (!name || !*name)
		return 0;
	if (!state || !*state)
		return -EINVAL;
	len = strlen(name);
	if (name[0] != '/' && name[0] != '@')
		return -EAFNOSUPPORT; /* vsock and relative paths: not for us */
	if (len >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	memcpy(addr.sun_path, name, len);
	if (name[0] == '@')
		addr.sun_path[0] = '\0'; /* abstract: the length, not a NUL, ends it */
	alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	slen = strlen(state);
	n = sendto(fd, state, slen, MSG_NOSIGNAL, (struct sockaddr *)&addr, alen);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != slen)
		err = -EIO;
	close(fd);
	return err ? err : 1;
}
