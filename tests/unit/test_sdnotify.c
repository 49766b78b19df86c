/* sdnotify: datagrams to $NOTIFY_SOCKET as systemd receives them, on a
 * socket this test creates (path and abstract), with our credentials. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sdnotify.h"
#include "scratch.h"

static int setup(void **state)
{
	(void)state;
	return scratch_setup("test_sdnotify");
}

static int teardown(void **state)
{
	return scratch_teardown(state);
}

/* A receiver like systemd's: datagram, SO_PASSCRED.  name is a path or
 * "@abstract". */
static int listen_at(const char *name)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;

	assert_true(fd >= 0);
	assert_true(strlen(name) < sizeof(addr.sun_path));
	memcpy(addr.sun_path, name, strlen(name));
	if (name[0] == '@')
		addr.sun_path[0] = '\0';
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, len), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
	return fd;
}

/* Receives one datagram; returns its length and the sender's pid. */
static ssize_t receive(int fd, char *buf, size_t size, pid_t *pid)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(struct ucred))];
	} control;
	struct iovec iov = { buf, size - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	msg.msg_control = control.buf;
	msg.msg_controllen = sizeof(control.buf);
	n = recvmsg(fd, &msg, MSG_DONTWAIT);
	assert_true(n >= 0);
	buf[n] = '\0';
	*pid = 0;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred cred;

			memcpy(&cred, CMSG_DATA(c), sizeof(cred));
			*pid = cred.pid;
		}
	}
	return n;
}

static void test_path_socket(void **state)
{
	char path[300], buf[256];
	pid_t pid;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/notify", dir);
	fd = listen_at(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(sdnotify_send("READY=1\nSTATUS=sampling 4 CPUs at 99 Hz"), 1);
	assert_int_equal(receive(fd, buf, sizeof(buf), &pid), 39);
	assert_string_equal(buf, "READY=1\nSTATUS=sampling 4 CPUs at 99 Hz");
	/* How systemd tells the main process (NotifyAccess=main). */
	assert_int_equal(pid, getpid());
	assert_int_equal(sdnotify_send("RELOADING=1"), 1);
	assert_int_equal(receive(fd, buf, sizeof(buf), &pid), 11);
	assert_string_equal(buf, "RELOADING=1");
	close(fd);
	/* Nobody listening any more. */
	unlink(path);
	assert_int_equal(sdnotify_send("STOPPING=1"), -ENOENT);
	unsetenv("NOTIFY_SOCKET");
}

static void test_abstract_socket(void **state)
{
	char name[64], buf[64];
	pid_t pid;
	int fd;

	(void)state;
	snprintf(name, sizeof(name), "@profd-test-notify-%d", (int)getpid());
	fd = listen_at(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(sdnotify_send("STOPPING=1"), 1);
	assert_int_equal(receive(fd, buf, sizeof(buf), &pid), 10);
	assert_string_equal(buf, "STOPPING=1");
	assert_int_equal(pid, getpid());
	close(fd);
	unsetenv("NOTIFY_SOCKET");
}

static void test_not_under_systemd(void **state)
{
	char longname[200];

	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(sdnotify_send("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(sdnotify_send("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "relative/notify", 1);
	assert_int_equal(sdnotify_send("READY=1"), -EAFNOSUPPORT);
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	assert_int_equal(sdnotify_send("READY=1"), -EAFNOSUPPORT);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[0] = '/';
	longname[sizeof(longname) - 1] = '\0';
	setenv("NOTIFY_SOCKET", longname, 1);
	assert_int_equal(sdnotify_send("READY=1"), -ENAMETOOLONG);
	setenv("NOTIFY_SOCKET", "/nonexistent/notify", 1);
	assert_int_equal(sdnotify_send(""), -EINVAL);
	assert_int_equal(sdnotify_send(NULL), -EINVAL);
	assert_int_equal(sdnotify_send("READY=1"), -ENOENT);
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_socket),
		cmocka_unit_test(test_abstract_socket),
		cmocka_unit_test(test_not_under_systemd),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
