/* profctl dump: fetch a profile from profd and render it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "fileio.h"
#include "jobsel.h"
#include "protocol.h"
#include "render.h"
#include "stackset.h"

void dump_usage(FILE *out)
{
	fputs("usage: profctl dump (--pid PID ... | --comm NAME | --exe PATH | --service NAME |\n"
	      "                     --unit NAME | --container ID | --cgroup PATH | --all) [options]\n"
	      "  -p, --pid PID        process to dump (repeatable)\n"
	      "  -a, --all            every process, one root frame each\n"
	      "  -f, --format FMT     folded (default), svg, pprof, speedscope, pstats, json,\n"
	      "                       gecko (a timeline per thread: Firefox Profiler),\n"
	      "                       trace (the timeline as Trace Event Format: speedscope,\n"
	      "                       Perfetto)\n"
	      "  -c, --comm NAME      processes with this command name\n"
	      "  -e, --exe PATH       processes running this executable (path or file name)\n"
	      "      --service NAME   processes of this workload (SERVICE in profctl list)\n"
	      "      --unit NAME      processes in this systemd unit (.service may be left out)\n"
	      "      --container ID   processes in this container (its id or a prefix)\n"
	      "      --cgroup PATH    processes in this cgroup or one below it\n"
	      "      --job ID         a distributed job's processes (profctl jobs), a root\n"
	      "                       frame each: \"rank 3 (pid N)\"\n"
	      "  -o, --output FILE    write there instead of stdout\n"
	      "  -t, --type TYPE      cpu (default), off-cpu, wall, gil, memory, gpu-driver,\n"
	      "                       gpu-driver-calls, cuda, cuda-calls, comm, comm-calls;\n"
	      "                       memory in bytes,\n"
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
	      "      --flame          SVG root at the bottom, however deep\n"
	      "  -j, --json           to stdout: the profile as JSON (format json); with\n"
	      "                       -o FILE: what was written, as JSON on stdout\n",
	      out);
}

/* --json keeps stdout JSON: the profile itself in format json, unless it
 * goes to a file, when stdout gets what was written. */
static int check_format(const struct ctl *ctl, struct cli_args *a)
{
	bool to_stdout = fileio_is_stdout(a->output);

	if (!a->format)
		a->format = ctl->json && to_stdout ? "json" : "folded";
	if (!render_format_known(a->format))
		return cli_usage_error(ctl, "unknown format '%s' (%s)", a->format, render_formats());
	if (ctl->json && to_stdout && strcmp(a->format, "json"))
		return cli_usage_error(ctl, "--json: stdout is for JSON; write %s with -o FILE", a->format);
	if (render_format_binary(a->format) && !a->output && isatty(STDOUT_FILENO))
		return cli_usage_error(ctl, "%s is binary: give -o FILE%s", a->format,
				       render_format_ext(a->format));
	return 0;
}

static int check(const struct ctl *ctl, struct cli_args *a)
{
	const struct proto_dump_req *r = &a->req;

	if (!a->job && !cli_selects(r) && !(r->flags & PROTO_DUMP_ALL))
		return cli_usage_error(ctl, "say which process: --pid PID, --comm NAME, --exe PATH, "
					    "--service NAME, --unit NAME, --container ID, "
					    "--cgroup PATH or --all");
	return check_format(ctl, a);
}

/* --format gecko or trace: the selection's timeline instead of a profile. */
static int dump_timeline(const struct ctl *ctl, struct cli_args *a)
{
	struct tlset *tl = NULL;
	struct buf out;
	int rc;

	buf_init(&out);
	rc = client_timeline(ctl, &a->req, &tl) ? 1
						   : fileio_render_timeline(ctl, a->format, tl, &out);
	if (!rc)
		rc = fileio_save(ctl, a->output, &out);
	if (!rc && !fileio_is_stdout(a->output))
		rc = fileio_report(ctl, a->output, a->format, tl->ss, out.len, false);
	tlset_free(tl);
	buf_free(&out);
	return rc;
}

int cmd_dump(const struct ctl *ctl, struct cli_args *a)
{
	struct stackset *ss = NULL;
	struct jobsel s = { 0 };
	struct buf out;
	int rc = check(ctl, a);

	if (!rc && a->job)
		rc = jobsel_select(ctl, a, &s);
	if (rc) {
		jobsel_free(&s);
		return rc;
	}
	if (render_format_timeline(a->format)) {
		rc = dump_timeline(ctl, a);
		jobsel_free(&s);
		return rc;
	}
	buf_init(&out);
	rc = client_dump(ctl, &a->req, &ss) ? 1 : 0;
	if (!rc && a->job && jobsel_label_roots(&s, a->job, ss) == -ENOMEM)
		rc = 1;
	if (!rc)
		rc = fileio_render(ctl, a->format, ss, &a->ro, &out);
	if (!rc)
		rc = fileio_save(ctl, a->output, &out);
	/* A file: stdout is free for what was written (under --json). */
	if (!rc && !fileio_is_stdout(a->output))
		rc = fileio_report(ctl, a->output, a->format, ss, out.len, false);
	stackset_free(ss);
	buf_free(&out);
	jobsel_free(&s);
	return rc;
}
