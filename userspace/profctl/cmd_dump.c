/* profctl dump: fetch a profile from profd and render it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "commands.h"
#include "duration.h"
#include "protocol.h"
#include "render.h"

struct dump_opts {
	struct proto_dump_req req;
	const char *format;
	const char *output;
	const char *title;
	bool inverted;
	bool flame;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: profctl dump (--pid PID ... | --comm NAME | --exe PATH | --all) [options]\n"
		"  -p, --pid PID        process to dump (repeatable)\n"
		"  -a, --all            every process, one root frame each\n"
		"  -f, --format FMT     folded (default), svg, pprof, speedscope, pstats, json\n"
		"  -c, --comm NAME      processes with this command name\n"
		"  -e, --exe PATH       processes running this executable (path or file name)\n"
		"  -o, --output FILE    write there instead of stdout\n"
		"  -t, --type TYPE      cpu (default), off-cpu, wall, gil, memory, gpu-driver,\n"
		"                       gpu-driver-calls, cuda, cuda-calls; memory in bytes,\n"
		"                       off-cpu and wall\n"
		"                       weigh stacks in ns, gil keeps samples holding the GIL\n"
		"      --since DUR      only samples newer than DUR ago (e.g. 5m)\n"
		"      --until DUR      only samples older than DUR ago\n"
		"      --by-thread      a root frame per thread (name and tid)\n"
		"      --by-task        a frame per asyncio task under it (CPython 3.14+)\n"
		"      --subprocesses   with --pid: also every descendant profd knows of,\n"
		"                       a root frame per process\n"
		"      --python-only    drop native and kernel frames\n"
		"      --title TEXT     SVG title\n"
		"      --inverted       SVG icicle view (the default when the plot is taller\n"
		"                       than a first screen)\n"
		"      --flame          SVG root at the bottom, however deep\n");
}

static int ago(const char *opt, const char *arg, uint64_t *out)
{
	uint64_t d;

	if (duration_parse(arg, &d)) {
		fprintf(stderr, "profctl dump: --%s: '%s' is not a duration (e.g. 30s, 5m)\n", opt, arg);
		return -EINVAL;
	}
	*out = clock_realtime_ns() - d;
	return 0;
}

enum { OPT_SINCE = 256, OPT_UNTIL, OPT_BY_THREAD, OPT_PY_ONLY, OPT_TITLE, OPT_INVERTED, OPT_FLAME, OPT_SUBPROCESSES,
       OPT_BY_TASK };

/* 0 to go on, 1 after --help, 2 on a usage error. */
static int parse(int argc, char **argv, struct dump_opts *o)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "comm", required_argument, NULL, 'c' },
		{ "exe", required_argument, NULL, 'e' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "until", required_argument, NULL, OPT_UNTIL },
		{ "by-thread", no_argument, NULL, OPT_BY_THREAD },
		{ "by-task", no_argument, NULL, OPT_BY_TASK },
		{ "python-only", no_argument, NULL, OPT_PY_ONLY },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ "inverted", no_argument, NULL, OPT_INVERTED },
		{ "flame", no_argument, NULL, OPT_FLAME },
		{ "subprocesses", no_argument, NULL, OPT_SUBPROCESSES },
		{ "type", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, err = 0;

	o->format = "folded";
	while (!err && (opt = getopt_long(argc, argv, "p:ac:e:f:o:t:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p': err = client_add_pid("dump", optarg, &o->req.pids, &o->req.npids); break;
		case 'a': o->req.flags |= PROTO_DUMP_ALL; break;
		case 'c': o->req.comm = optarg; break;
		case 't': o->req.type = optarg; break;
		case 'e': o->req.exe = optarg; break;
		case 'f': o->format = optarg; break;
		case 'o': o->output = optarg; break;
		case OPT_SINCE: err = ago("since", optarg, &o->req.since_ns); break;
		case OPT_UNTIL: err = ago("until", optarg, &o->req.until_ns); break;
		case OPT_BY_THREAD: o->req.flags |= PROTO_DUMP_BY_THREAD; break;
		case OPT_BY_TASK: o->req.flags |= PROTO_DUMP_BY_TASK; break;
		case OPT_PY_ONLY: o->req.flags |= PROTO_DUMP_PYTHON_ONLY; break;
		case OPT_TITLE: o->title = optarg; break;
		case OPT_INVERTED: o->inverted = true; break;
		case OPT_FLAME: o->flame = true; break;
		case OPT_SUBPROCESSES: o->req.flags |= PROTO_DUMP_SUBPROCESSES; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return 2;
		}
	}
	if (err)
		return 2;
	if (optind < argc) {
		fprintf(stderr, "profctl dump: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!o->req.npids && !o->req.comm && !o->req.exe && !(o->req.flags & PROTO_DUMP_ALL)) {
		fprintf(stderr, "profctl dump: say which process: --pid PID, --comm NAME, --exe PATH or --all\n");
		return 2;
	}
	if (!render_format_known(o->format)) {
		fprintf(stderr, "profctl dump: unknown format '%s' (%s)\n", o->format, render_formats());
		return 2;
	}
	if (render_format_binary(o->format) && !o->output && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "profctl dump: %s is binary: give -o FILE%s\n", o->format,
			render_format_ext(o->format));
		return 2;
	}
	return 0;
}

static int render(const struct dump_opts *o, const struct stackset *ss, struct buf *out)
{
	struct render_opts ro = { .title = o->title, .inverted = o->inverted, .flame = o->flame };

	return render_format(o->format, ss, &ro, out);
}

static int write_output(const char *path, const struct buf *b)
{
	int fd = STDOUT_FILENO, err;

	if (path && strcmp(path, "-")) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
	}
	err = buf_write_fd(b, fd);
	if (fd != STDOUT_FILENO && close(fd) && !err)
		err = -errno;
	return err;
}

int cmd_dump(const struct ctl *ctl, int argc, char **argv)
{
	struct dump_opts o;
	struct stackset *ss = NULL;
	struct buf out;
	int rc, err;

	memset(&o, 0, sizeof(o));
	rc = parse(argc, argv, &o);
	if (rc) {
		free(o.req.pids);
		return rc == 1 ? 0 : 2;
	}
	rc = 1;
	buf_init(&out);
	if (client_dump(ctl, &o.req, &ss))
		goto done;
	err = render(&o, ss, &out);
	if (err || out.failed) {
		client_error(ctl, "rendering %s failed: %s", o.format,
			     err == -ENODATA ? "the profile has no Python frames, which pstats needs"
					     : strerror(err ? -err : ENOMEM));
		goto done;
	}
	err = write_output(o.output, &out);
	if (err) {
		client_error(ctl, "writing %s: %s", o.output ? o.output : "stdout", strerror(-err));
		goto done;
	}
	rc = 0;
done:
	stackset_free(ss);
	buf_free(&out);
	free(o.req.pids);
	return rc;
}
