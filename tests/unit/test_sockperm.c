/* sockperm: the control socket's mode and group, with and without the
 * group, and what it refuses to touch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sockperm.h"
#include "scratch.h"

static int setup(void **state)
{
	(void)state;
	return scratch_setup("test_sockperm");
}

static int teardown(void **state)
{
	return scratch_teardown(state);
}

/* A listening socket at dir/name, as control_listen makes it. */
static int make_socket(const char *name, char *path, size_t size)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(path, size, "%s/%s", dir, name);
	if (fd < 0 || strlen(path) >= sizeof(addr.sun_path))
		return -1;
	strcpy(addr.sun_path, path);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(fd, 1)) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct stat stat_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st;
}

/* Without the group only root may connect: a socket bound 0777 (the
 * umask of a careless start) or 0666 ends up 0600, never open to all. */
static void test_no_group_means_0600(void **state)
{
	static const mode_t before[] = {0700, 0666, 0777};
	char path[300];
	size_t i;
	int fd = make_socket("a.sock", path, sizeof(path));

	(void)state;
	assert_true(fd >= 0);
	for (i = 0; i < sizeof(before) / sizeof(before[0]); i++) {
		assert_int_equal(chmod(path, before[i]), 0);
		assert_int_equal(sockperm_apply(path, "profd-test-no-such-group"), 0);
		assert_int_equal(stat_of(path).st_mode & 07777, 0600);
	}
	close(fd);
}

static void test_group_means_0660(void **state)
{
	struct group *gr = getgrgid(getegid());
	char path[300], name[256];
	struct stat st;
	int fd = make_socket("b.sock", path, sizeof(path));

	(void)state;
	assert_true(fd >= 0);
	if (!gr)
		skip(); /* our own group has no name: nothing to look up */
	snprintf(name, sizeof(name), "%s", gr->gr_name);
	assert_int_equal(sockperm_apply(path, name), 0);
	st = stat_of(path);
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_int_equal(st.st_gid, getegid());
	/* Root may give it to a group it is not in. */
	if (geteuid() == 0 && (gr = getgrgid(65534)) != NULL) {
		snprintf(name, sizeof(name), "%s", gr->gr_name);
		assert_int_equal(sockperm_apply(path, name), 0);
		st = stat_of(path);
		assert_int_equal(st.st_mode & 07777, 0660);
		assert_int_equal(st.st_gid, 65534);
	}
	close(fd);
}

/* The real entry point: whatever this machine has. */
static void test_control_socket_perms(void **state)
{
	struct group *gr = getgrnam(SOCKPERM_GROUP);
	gid_t gid = gr ? gr->gr_gid : 0;
	char path[300];
	struct stat st;
	int fd = make_socket("c.sock", path, sizeof(path)), err;

	(void)state;
	assert_true(fd >= 0);
	err = control_socket_perms(path);
	st = stat_of(path);
	if (!gr) {
		assert_int_equal(err, 0);
		assert_int_equal(st.st_mode & 07777, 0600);
	} else if (err == 0) {
		assert_int_equal(st.st_mode & 07777, 0660);
		assert_int_equal(st.st_gid, gid);
	} else {
		/* Not root and not in the group: closed, not open. */
		assert_int_equal(err, -EPERM);
		assert_int_equal(st.st_mode & 07777, 0600);
	}
	close(fd);
}

static void test_refuses_non_sockets(void **state)
{
	char path[300], link[300], file[300];
	int fd = make_socket("d.sock", path, sizeof(path)), f;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(chmod(path, 0700), 0);
	snprintf(file, sizeof(file), "%s/plain", dir);
	f = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(f >= 0);
	close(f);
	assert_int_equal(sockperm_apply(file, "profd-test-no-such-group"), -ENOTSOCK);
	assert_int_equal(stat_of(file).st_mode & 07777, 0600);
	/* A symlink is not followed, even to a real socket. */
	snprintf(link, sizeof(link), "%s/link.sock", dir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(sockperm_apply(link, "profd-test-no-such-group"), -ENOTSOCK);
	assert_int_equal(stat_of(path).st_mode & 07777, 0700);
	snprintf(file, sizeof(file), "%s/absent.sock", dir);
	assert_int_equal(sockperm_apply(file, "profd-test-no-such-group"), -ENOENT);
	close(fd);
}

/* Giving the socket to a group we may not use leaves it root-only. */
static int fail_closed_as(const char *group)
{
	char path[300];
	struct stat st;
	int fd = make_socket("e.sock", path, sizeof(path)), err;

	if (fd < 0)
		return 10;
	err = sockperm_apply(path, group);
	if (lstat(path, &st))
		return 11;
	close(fd);
	if (err != -EPERM)
		return 12;
	return (st.st_mode & 07777) == 0600 ? 0 : 13;
}

static void test_fails_closed(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	if (geteuid() != 0) {
		gid_t groups[256];
		int i, n = getgroups(256, groups);

		for (i = 0; i < n; i++)
			if (groups[i] == 0)
				skip(); /* we are in group root */
		if (getegid() == 0)
			skip();
		assert_int_equal(fail_closed_as("root"), 0);
		return;
	}
	/* As root: become nobody, who may not hand a file to group root. */
	assert_int_equal(chmod(dir, 0777), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(20);
		_exit(fail_closed_as("root"));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(chmod(dir, 0700), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_group_means_0600),
		cmocka_unit_test(test_group_means_0660),
		cmocka_unit_test(test_control_socket_perms),
		cmocka_unit_test(test_refuses_non_sockets),
		cmocka_unit_test(test_fails_closed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
