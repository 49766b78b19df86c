/* profctl diff: a differential flamegraph of two profiles, before and
 * after a change: two folded-stacks files, or two time windows of a
 * process from profd (--pid N --before 10m..5m --after 5m..). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "clock.h"
#include "commands.h"
#include "duration.h"
#include "protocol.h"
#include "fileio.h"
#include "render_diff.h"
#include "render_svg.h"
#include "stackset.h"

enum { OPT_SUBTITLE = 256, OPT_MIN_WIDTH, OPT_ABSOLUTE, OPT_BEFORE, OPT_AFTER };

struct diff_args {
	const char *before, *after, *output;
	struct diff_options o;
	bool quiet;
	uint32_t *pids; /* window mode: profiles from profd */
	size_t npids;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: profctl diff BEFORE.folded AFTER.folded [-o OUT.svg] [options]\n"
		"       profctl diff --pid PID --before WINDOW --after WINDOW [-o OUT.svg] [options]\n"
		"\n"
		"A WINDOW is FROM..UNTIL, both ago: 10m..5m is from ten until five minutes\n"
		"ago; 5m.. or 5m is the last five minutes.\n"
		"\n"
		"Differential flamegraph: frame widths from AFTER, red where a frame grew,\n"
		"blue where it shrank (by its share of each profile's total), tooltips with\n"
		"both counts and the delta; paths only BEFORE has are listed under the graph.\n"
		"\n"
		"  -p, --pid PID       the process (repeatable), with --before and --after\n"
		"      --before WINDOW the profile before the change\n"
		"      --after WINDOW  the profile after it\n"
		"  -o, --output FILE   write the SVG to FILE instead of stdout\n"
		"  -t, --title T       title (default \"Differential flame graph\")\n"
		"      --subtitle S    second title line (default \"BEFORE -> AFTER\")\n"
		"      --absolute      color by the change in raw counts, not in shares\n"
		"  -w, --width N       width in pixels, %u..%u (default %u)\n"
		"      --min-width PX  leave out frames narrower than PX (default %.1f)\n"
		"  -q, --quiet         no summary line on stderr\n"
		"  -h, --help          show this help\n",
		SVG_MIN_WIDTH, SVG_MAX_WIDTH, SVG_DEFAULT_WIDTH, SVG_DEFAULT_MIN_FRAME_PX);
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "profctl diff: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'profctl diff --help'.\n");
	return 2;
}

static int parse_number(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_value(int c, struct diff_args *a)
{
	double v;

	switch (c) {
	case 'p':
		if (client_add_pid("diff", optarg, &a->pids, &a->npids))
			return 2;
		break;
	case OPT_BEFORE: a->before = optarg; break;
	case OPT_AFTER: a->after = optarg; break;
	case 'o': a->output = optarg; break;
	case 't': a->o.title = optarg; break;
	case 'q': a->quiet = true; break;
	case OPT_SUBTITLE: a->o.subtitle = optarg; break;
	case OPT_ABSOLUTE: a->o.absolute = true; break;
	case 'w':
		if (parse_number(optarg, SVG_MIN_WIDTH, SVG_MAX_WIDTH, &v) || v != (uint32_t)v)
			return usage_error("bad --width '%s'", optarg);
		a->o.width = (uint32_t)v;
		break;
	case OPT_MIN_WIDTH:
		if (parse_number(optarg, 0, 1000, &v))
			return usage_error("bad --min-width '%s' (0..1000 px)", optarg);
		a->o.min_frame_px = v > 0 ? v : -1; /* 0: draw everything */
		break;
	}
	return 0;
}

/* 0 to go on, -1 after --help, else an exit code. */
static int parse_args(int argc, char **argv, struct diff_args *a)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, 't' },
		{ "subtitle", required_argument, NULL, OPT_SUBTITLE },
		{ "absolute", no_argument, NULL, OPT_ABSOLUTE },
		{ "width", required_argument, NULL, 'w' },
		{ "min-width", required_argument, NULL, OPT_MIN_WIDTH },
		{ "quiet", no_argument, NULL, 'q' },
		{ "pid", required_argument, NULL, 'p' },
		{ "before", required_argument, NULL, OPT_BEFORE },
		{ "after", required_argument, NULL, OPT_AFTER },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, rc;

	optind = 0;
	while ((c = getopt_long(argc, argv, "p:o:t:w:qh", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return -1;
		}
		if (c == '?' || c == ':') {
			fprintf(stderr, "Try 'profctl diff --help'.\n");
			return 2;
		}
		rc = parse_value(c, a);
		if (rc)
			return rc;
	}
	if (a->npids) {
		if (!a->before || !a->after || optind < argc)
			return usage_error("%s", "--pid needs --before WINDOW and --after WINDOW, no files");
		return 0;
	}
	if (a->before || a->after)
		return usage_error("%s", "--before and --after go with --pid");
	if (argc - optind != 2)
		return usage_error("%s", argc - optind < 2 ? "needs BEFORE and AFTER folded files"
							   : "takes exactly two files");
	a->before = argv[optind];
	a->after = argv[optind + 1];
	if (!strcmp(a->before, "-") && !strcmp(a->after, "-"))
		return usage_error("%s", "only one of BEFORE and AFTER can be stdin");
	return 0;
}

static void print_summary(const struct diff_summary *s)
{
	fprintf(stderr,
		"profctl diff: before %llu, after %llu samples; %zu frames grew, %zu shrank, "
		"%zu unchanged; %zu paths (%llu samples) only in before\n",
		(unsigned long long)s->before_total, (unsigned long long)s->after_total, s->grew,
		s->shrank, s->same, s->gone, (unsigned long long)s->gone_samples);
}

/* "10m..5m" -> since/until as CLOCK_REALTIME ns (until 0 = now). */
static int parse_window(const char *w, uint64_t now, uint64_t *since, uint64_t *until)
{
	char from[32];
	const char *dots = strstr(w, "..");
	uint64_t a, b = 0;

	if (strlen(w) >= sizeof(from))
		return -EINVAL;
	snprintf(from, sizeof(from), "%.*s", dots ? (int)(dots - w) : (int)strlen(w), w);
	if (duration_parse(from, &a) || a > now)
		return -EINVAL;
	if (dots && dots[2] && (duration_parse(dots + 2, &b) || b >= a))
		return -EINVAL;
	*since = now - a;
	*until = b ? now - b : 0;
	return 0;
}

static int fetch_window(const struct ctl *ctl, const struct diff_args *a, const char *w,
			struct stackset **out)
{
	struct proto_dump_req r = { 0 };
	uint64_t now = clock_realtime_ns();

	if (parse_window(w, now, &r.since_ns, &r.until_ns)) {
		fprintf(stderr, "profctl diff: bad window '%s' (e.g. 10m..5m or 5m)\n", w);
		return -EINVAL;
	}
	r.pids = a->pids;
	r.npids = a->npids;
	return client_dump(ctl, &r, out);
}

static int load(const struct ctl *ctl, const struct diff_args *a, struct stackset **before,
		struct stackset **after)
{
	if (a->npids) {
		stackset_free(*before);
		stackset_free(*after);
		*before = *after = NULL;
		return fetch_window(ctl, a, a->before, before) || fetch_window(ctl, a, a->after, after);
	}
	return fileio_load_folded("diff", a->before, *before) ||
	       fileio_load_folded("diff", a->after, *after);
}

static int run(const struct ctl *ctl, const struct diff_args *a, struct stackset **bp,
	       struct stackset **ap, struct buf *out)
{
	struct diff_options o = a->o;
	struct diff_summary sum;
	struct stackset *before, *after, *split[2] = { NULL, NULL };
	char subtitle[512];
	int err;

	if (load(ctl, a, bp, ap))
		return 1;
	before = *bp;
	after = *ap;
	if (a->npids && !o.subtitle) {
		snprintf(subtitle, sizeof(subtitle), "%s: %s \xe2\x86\x92 %s",
			 after->title ? after->title : "", a->before, a->after);
		o.subtitle = subtitle;
	}
	if (!o.subtitle) {
		snprintf(subtitle, sizeof(subtitle), "%s \xe2\x86\x92 %s",
			 before->title ? before->title : "stdin",
			 after->title ? after->title : "stdin");
		o.subtitle = subtitle;
	}
	/* Signed profiles (mmap): compared as mapped and unmapped side by side. */
	if (stackset_signed(before) || stackset_signed(after)) {
		before = split[0] = stackset_split_signs(before);
		after = split[1] = stackset_split_signs(after);
	}
	err = before && after ? render_diff(before, after, &o, out, &sum) : -ENOMEM;
	stackset_free(split[0]);
	stackset_free(split[1]);
	if (err) {
		fprintf(stderr, "profctl diff: cannot render: %s\n", strerror(-err));
		return 1;
	}
	err = fileio_write(a->output, out);
	if (err) {
		fprintf(stderr, "profctl diff: cannot write %s: %s\n",
			a->output ? a->output : "stdout", strerror(-err));
		return 1;
	}
	if (!a->quiet)
		print_summary(&sum);
	return 0;
}

int cmd_diff(const struct ctl *ctl, int argc, char **argv)
{
	struct diff_args a = { 0 };
	struct stackset *before, *after;
	struct buf out;
	int rc;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	before = stackset_new();
	after = stackset_new();
	buf_init(&out);
	if (before && after) {
		rc = run(ctl, &a, &before, &after, &out);
	} else {
		fprintf(stderr, "profctl diff: out of memory\n");
		rc = 1;
	}
	buf_free(&out);
	stackset_free(before);
	stackset_free(after);
	free(a.pids);
	return rc;
}
