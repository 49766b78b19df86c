/* profctl record: profile a process from now for a while, then write the
 * file (py-spy record's habit).  Exact window: the profile at the end
 * minus the profile at the start, so time-bucket edges do not leak in. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "duration.h"
#include "protocol.h"
#include "render.h"
#include "stackset.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct record_opts {
	uint32_t pid;
	uint64_t duration_ns;
	const char *format, *output, *title;
	uint32_t flags;
};

static void usage(FILE *out)
{
	fprintf(out, "usage: profctl record --pid PID [--duration 30s] [-o FILE] [--format FMT]\n"
		     "  -p, --pid PID        process to record (profd must be running)\n"
		     "  -d, --duration DUR   how long (default 10s); Ctrl-C stops early\n"
		     "  -o, --output FILE    where to write (default profile-PID.EXT)\n"
		     "  -f, --format FMT     %s (default svg)\n"
		     "      --by-thread      a root frame per thread\n"
		     "      --python-only    Python frames only\n"
		     "      --title TEXT     title of the flamegraph\n",
		render_formats());
}

enum { OPT_BY_THREAD = 256, OPT_PY_ONLY, OPT_TITLE };

static int parse(int argc, char **argv, struct record_opts *o)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "by-thread", no_argument, NULL, OPT_BY_THREAD },
		{ "python-only", no_argument, NULL, OPT_PY_ONLY },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	o->duration_ns = 10ull * 1000000000ull;
	o->format = "svg";
	while ((opt = getopt_long(argc, argv, "p:d:o:f:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p': {
			uint32_t *pids = NULL;
			size_t n = 0;

			if (client_add_pid("record", optarg, &pids, &n))
				return 2;
			o->pid = pids[0];
			free(pids);
			break;
		}
		case 'd':
			if (duration_parse(optarg, &o->duration_ns) || !o->duration_ns) {
				fprintf(stderr, "profctl record: --duration: '%s' is not a duration\n", optarg);
				return 2;
			}
			break;
		case 'o': o->output = optarg; break;
		case 'f': o->format = optarg; break;
		case OPT_BY_THREAD: o->flags |= PROTO_DUMP_BY_THREAD; break;
		case OPT_PY_ONLY: o->flags |= PROTO_DUMP_PYTHON_ONLY; break;
		case OPT_TITLE: o->title = optarg; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return 2;
		}
	}
	if (!o->pid || optind < argc) {
		usage(stderr);
		return 2;
	}
	if (!render_format_known(o->format)) {
		fprintf(stderr, "profctl record: unknown format '%s' (%s)\n", o->format, render_formats());
		return 2;
	}
	return 0;
}

/* The profile so far, or an empty one when profd has no samples yet. */
static int snapshot(const struct ctl *ctl, const struct proto_dump_req *req, struct stackset **ss)
{
	struct ctl quiet = *ctl;
	char path[32];
	int err;

	snprintf(path, sizeof(path), "/proc/%u", req->pids[0]);
	quiet.quiet = true;
	err = client_dump(&quiet, req, ss);
	if (err == -ENODATA || (err == -ESRCH && access(path, F_OK) == 0)) {
		*ss = stackset_new();
		return *ss ? 0 : -ENOMEM;
	}
	if (err)
		client_dump(ctl, req, ss); /* again, to print the error */
	return err;
}

static void progress(uint32_t pid, uint64_t done, uint64_t total, bool alive)
{
	if (!isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\rprofctl: recording pid %u: %llus of %llus%s ", pid,
		(unsigned long long)(done / 1000000000ull), (unsigned long long)(total / 1000000000ull),
		alive ? "" : " (process exited)");
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleep until the duration passes, the process exits or Ctrl-C. */
static void wait_window(const struct record_opts *o)
{
	uint64_t start = mono_ns(), now;
	char path[32];
	bool alive = true;

	snprintf(path, sizeof(path), "/proc/%u", o->pid);
	signal(SIGINT, on_sigint);
	while (!interrupted && alive && (now = mono_ns()) - start < o->duration_ns) {
		progress(o->pid, now - start, o->duration_ns, alive);
		usleep(200000);
		alive = access(path, F_OK) == 0;
	}
	progress(o->pid, mono_ns() - start, o->duration_ns, alive);
	if (isatty(STDERR_FILENO))
		fputc('\n', stderr);
	signal(SIGINT, SIG_DFL);
	if (!alive)
		usleep(300000); /* let profd take in the last samples */
}

static int write_file(const char *path, const struct buf *b)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), err;

	if (fd < 0)
		return -errno;
	err = buf_write_fd(b, fd);
	if (close(fd) && !err)
		err = -errno;
	return err;
}

int cmd_record(const struct ctl *ctl, int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct proto_dump_req req = { 0 };
	struct stackset *before = NULL, *after = NULL, *window = NULL;
	struct render_opts ro = { 0 };
	char defpath[64];
	struct buf out;
	int rc = parse(argc, argv, &o), err;

	if (rc)
		return rc == 1 ? 0 : 2;
	rc = 1;
	buf_init(&out);
	req.pids = &o.pid;
	req.npids = 1;
	req.flags = o.flags;
	snprintf(defpath, sizeof(defpath), "/proc/%u", o.pid);
	if (access(defpath, F_OK)) {
		client_error(ctl, "no such process: %u", o.pid);
		return 1;
	}
	if (snapshot(ctl, &req, &before))
		goto out;
	wait_window(&o);
	if (client_dump(ctl, &req, &after))
		goto out;
	window = stackset_subtract(after, before);
	if (!window) {
		client_error(ctl, "out of memory");
		goto out;
	}
	ro.title = o.title;
	err = render_format(o.format, window, &ro, &out);
	if (err || out.failed) {
		client_error(ctl, "rendering %s failed: %s", o.format,
			     err == -ENODATA ? "no Python frames" : strerror(err ? -err : ENOMEM));
		goto out;
	}
	if (!o.output) {
		snprintf(defpath, sizeof(defpath), "profile-%u%s", o.pid, render_format_ext(o.format));
		o.output = defpath;
	}
	err = write_file(o.output, &out);
	if (err) {
		client_error(ctl, "writing %s: %s", o.output, strerror(-err));
		goto out;
	}
	fprintf(stderr, "profctl: wrote %s (%llu samples)\n", o.output,
		(unsigned long long)window->total);
	rc = 0;
out:
	stackset_free(before);
	stackset_free(after);
	stackset_free(window);
	buf_free(&out);
	return rc;
}
