#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The numeric id in environment variable name, or -1. */
static long env_id(const char *name)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return errno || *end || v < 0 ? -1 : v;
}

/* Root under sudo runs CMD as the user who typed sudo: a training job's
 * checkpoints and caches must not become root's. */
static int drop_to_sudo_user(void)
{
	long uid = env_id("SUDO_UID"), gid = env_id("SUDO_GID");
	struct passwd *pw;

	if (getuid() != 0 || uid <= 0 || gid < 0)
		return 0;
	pw = getpwuid((uid_t)uid);
	if ((pw ? initgroups(pw->pw_name, (gid_t)gid) : setgroups(0, NULL)) ||
	    setgid((gid_t)gid) || setuid((uid_t)uid))
		return -errno;
	return 0;
}

/* In the child: wait for the go, become the user, exec; report errno. */
static void child(char *const argv[], int go, int err)
{
	char c;
	int e;

	signal(SIGINT, SIG_DFL);
	if (read(go, &c, 1) != 1)
		_exit(127); /* profctl went away before the start */
	close(go);
	e = drop_to_sudo_user();
	if (!e) {
		execvp(argv[0], argv);
		e = -errno;
	}
	e = -e;
	if (write(err, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int launch_held(char *const argv[], struct launch *l)
{
	int go[2], err[2];

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(err, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	l->pid = fork();
	if (l->pid == 0) {
		close(go[1]);
		close(err[0]);
		child(argv, go[0], err[1]);
	}
	close(go[0]);
	close(err[1]);
	if (l->pid < 0) {
		int e = -errno;

		close(go[1]);
		close(err[0]);
		return e;
	}
	l->go_fd = go[1];
	l->err_fd = err[0];
	return 0;
}

int launch_release(struct launch *l)
{
	ssize_t n;
	int e = 0;

	n = write(l->go_fd, "g", 1);
	close(l->go_fd);
	l->go_fd = -1;
	if (n != 1) {
		launch_abort(l);
		return -EPIPE;
	}
	/* EOF: the exec closed the child's end (close-on-exec). */
	do
		n = read(l->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(l->err_fd);
	l->err_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		waitpid(l->pid, NULL, 0);
		return -(e ? e : ENOEXEC);
	}
	return 0;
}

int launch_poll(struct launch *l, bool wait, int *code)
{
	int status;
	pid_t r;

	do
		r = waitpid(l->pid, &status, wait ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return r < 0 ? -errno : 0;
	*code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	return 1;
}

void launch_abort(struct launch *l)
{
	if (l->go_fd >= 0)
		close(l->go_fd);
	if (l->err_fd >= 0)
		close(l->err_fd);
	kill(l->pid, SIGKILL);
	waitpid(l->pid, NULL, 0);
}
