/* pyinterp.h: test helpers shared by the Python tests (header only: each
 * tests/unit/test_*.c is its own executable).
 *
 * Interpreters are discovered at run time, never configured:
 *   PROFD_TEST_PYTHONS   colon-separated interpreter paths; when set, only
 *                        these are used
 *   otherwise            python3.N and python3 on PATH, plus
 *                        $(pyenv root)/versions/<any>/bin/python3 when
 *                        pyenv is installed, plus Debian sid's 3.14 and
 *                        3.15 where the end-to-end tests have fetched
 *                        them into $BUILD/debian-pythons (get_debian_pythons.sh)
 * Each candidate is asked for its version and sys.executable; duplicates
 * (same real path) are dropped. */
#ifndef PROFD_TEST_PYINTERP_H
#define PROFD_TEST_PYINTERP_H

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PYINTERP_MAX 32

struct pyinterp {
	char path[PATH_MAX]; /* real path of the interpreter binary */
	int minor;	     /* 3.minor */
};

struct pyinterps {
	struct pyinterp list[PYINTERP_MAX];
	int n;
};

/* Run a command and read the first line of its output. */
static inline int pyinterp_cmd_line(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	int ok;

	if (!p)
		return -1;
	ok = fgets(out, (int)len, p) != NULL;
	if (pclose(p) != 0 || !ok)
		return -1;
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

static inline void pyinterp_try(struct pyinterps *ps, const char *cand)
{
	char cmd[PATH_MAX + 200], line[PATH_MAX + 32], real[PATH_MAX];
	int major, minor, pos = 0, i;

	if (ps->n >= PYINTERP_MAX || access(cand, X_OK) || strchr(cand, '\''))
		return;
	if (snprintf(cmd, sizeof(cmd),
		     "'%s' -c 'import sys; print(sys.version_info[0], sys.version_info[1], "
		     "sys.executable)' 2>/dev/null",
		     cand) >= (int)sizeof(cmd))
		return;
	if (pyinterp_cmd_line(cmd, line, sizeof(line)) ||
	    sscanf(line, "%d %d %n", &major, &minor, &pos) < 2 || !pos || major != 3 ||
	    !realpath(line + pos, real))
		return;
	for (i = 0; i < ps->n; i++)
		if (!strcmp(ps->list[i].path, real))
			return;
	snprintf(ps->list[ps->n].path, sizeof(ps->list[ps->n].path), "%s", real);
	ps->list[ps->n].minor = minor;
	ps->n++;
}

static inline void pyinterp_from_path(struct pyinterps *ps)
{
	const char *env = getenv("PATH");
	char *copy, *dir, *save = NULL;
	char cand[PATH_MAX];
	int minor;

	if (!env || !(copy = strdup(env)))
		return;
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		for (minor = 9; minor <= 20; minor++) {
			if (snprintf(cand, sizeof(cand), "%s/python3.%d", dir, minor) <
			    (int)sizeof(cand))
				pyinterp_try(ps, cand);
		}
		if (snprintf(cand, sizeof(cand), "%s/python3", dir) < (int)sizeof(cand))
			pyinterp_try(ps, cand);
	}
	free(copy);
}

static inline void pyinterp_from_pyenv(struct pyinterps *ps)
{
	char root[PATH_MAX], dir[PATH_MAX + 16], cand[2 * PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (pyinterp_cmd_line("pyenv root 2>/dev/null", root, sizeof(root)))
		return;
	if (snprintf(dir, sizeof(dir), "%s/versions", root) >= (int)sizeof(dir))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (snprintf(cand, sizeof(cand), "%s/%s/bin/python3", dir, de->d_name) <
		    (int)sizeof(cand))
			pyinterp_try(ps, cand);
	}
	closedir(d);
}

static inline void pyinterp_from_build(struct pyinterps *ps)
{
	const char *build = getenv("BUILD");
	char cand[PATH_MAX];
	int minor;

	for (minor = 14; build && minor <= 15; minor++)
		if (snprintf(cand, sizeof(cand), "%s/debian-pythons/python3.%d/usr/bin/python3.%d",
			     build, minor, minor) < (int)sizeof(cand))
			pyinterp_try(ps, cand);
}

static inline void pyinterp_discover(struct pyinterps *ps)
{
	const char *env = getenv("PROFD_TEST_PYTHONS");

	memset(ps, 0, sizeof(*ps));
	if (env) {
		char *copy = strdup(env), *p, *save = NULL;

		for (p = copy ? strtok_r(copy, ":", &save) : NULL; p;
		     p = strtok_r(NULL, ":", &save))
			pyinterp_try(ps, p);
		free(copy);
		return;
	}
	pyinterp_from_path(ps);
	pyinterp_from_pyenv(ps);
	pyinterp_from_build(ps);
}

/* A fresh scratch directory under PROFD_TEST_TMP (or /tmp). */
static inline int pyinterp_scratch(const char *tag, char *out, size_t len)
{
	const char *base = getenv("PROFD_TEST_TMP");

	if (!base || !*base)
		base = "/tmp";
	mkdir(base, 0755); /* CTest's scratch dir may not exist yet */
	if (snprintf(out, len, "%s/%s.XXXXXX", base, tag) >= (int)len)
		return -ENAMETOOLONG;
	return mkdtemp(out) ? 0 : -errno;
}

static inline int pyinterp_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f)
		return -errno;
	fputs(text, f);
	err = ferror(f) ? -EIO : 0;
	if (fclose(f))
		err = -errno;
	return err;
}

/* Start "python script args..." with stdin from /dev/null; the pid. */
static inline pid_t pyinterp_spawn(const char *python, const char *script, const char *arg)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (!freopen("/dev/null", "r", stdin))
			_exit(127);
		execl(python, python, script, arg, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static inline void pyinterp_kill(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Run python script arg to completion; 0 if it exited with 0. */
static inline int pyinterp_run(const char *python, const char *script, const char *arg)
{
	int status;
	pid_t pid = pyinterp_spawn(python, script, arg);

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static inline void pyinterp_sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Wait (up to ms) for a file to exist. */
static inline int pyinterp_wait_file(const char *path, int ms)
{
	for (; ms > 0; ms -= 20) {
		if (!access(path, F_OK))
			return 0;
		pyinterp_sleep_ms(20);
	}
	return -ETIMEDOUT;
}

#endif
