/* profctl render: offline rendering of a folded-stacks file (ours, or any
 * stackcollapse-*.pl output) in any output format. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "commands.h"
#include "fileio.h"
#include "render.h"
#include "render_svg.h"
#include "stackset.h"

enum { OPT_SUBTITLE = 256, OPT_INVERTED, OPT_FLAME, OPT_MIN_WIDTH, OPT_RATE };

struct render_args {
	const char *input;
	const char *output;
	const char *format;
	uint32_t rate_hz;
	struct render_opts ro;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: profctl render [-i FILE|-] [-f FORMAT] [-o OUT] [--title T] [--rate HZ]\n"
		"                      [--subtitle S] [--inverted|--flame] [--width N] [--min-width PX]\n"
		"\n"
		"Render a folded-stacks file (\"root;caller;leaf COUNT\" per line) offline.\n"
		"\n"
		"  -i, --input FILE    folded input, '-' for stdin (default; also positional)\n"
		"  -f, --format FMT    one of: %s (default svg)\n"
		"                      svg: interactive flamegraph; folded: sorted, merged\n"
		"                      folded text; pprof: gzipped profile.proto for\n"
		"                      'go tool pprof'; speedscope: speedscope.app JSON;\n"
		"                      pstats: Python pstats/snakeviz file (Python frames\n"
		"                      only); json: profd's JSON (docs/json-format.md)\n"
		"  -o, --output FILE   write to FILE instead of stdout\n"
		"  -t, --title T       title (default: the input file name)\n"
		"  -r, --rate HZ       sampling rate the stacks were taken at: gives pprof a\n"
		"                      CPU time and pstats seconds (default: unknown, so\n"
		"                      pstats counts one second per sample)\n"
		"      --subtitle S    second title line (svg)\n"
		"      --inverted      icicle graph: root at the top (svg; the default when\n"
		"                      the plot is taller than a first screen)\n"
		"      --flame         root at the bottom however deep (svg)\n"
		"  -w, --width N       SVG width in pixels, %u..%u (default %u)\n"
		"      --min-width PX  leave out frames narrower than PX (default %.1f)\n"
		"  -h, --help          show this help\n",
		render_formats(), SVG_MIN_WIDTH, SVG_MAX_WIDTH, SVG_DEFAULT_WIDTH,
		SVG_DEFAULT_MIN_FRAME_PX);
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "profctl render: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'profctl render --help'.\n");
	return 2;
}

static int parse_uint(const char *s, unsigned long lo, unsigned long hi, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_px(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v <= 1000))
		return -EINVAL;
	/* 0 means "draw everything" here; the library spells that < 0. */
	*out = v > 0 ? v : -1;
	return 0;
}

/* The value options; 0, or an exit code after a usage error. */
static int parse_value(int c, struct render_args *a)
{
	switch (c) {
	case 'i': a->input = optarg; break;
	case 'f': a->format = optarg; break;
	case 'o': a->output = optarg; break;
	case 't': a->ro.title = optarg; break;
	case OPT_SUBTITLE: a->ro.subtitle = optarg; break;
	case OPT_INVERTED: a->ro.inverted = true; break;
	case OPT_FLAME: a->ro.flame = true; break;
	case 'r':
		if (parse_uint(optarg, 1, 1000000, &a->rate_hz))
			return usage_error("bad --rate '%s' (1..1000000 Hz)", optarg);
		break;
	case 'w':
		if (parse_uint(optarg, SVG_MIN_WIDTH, SVG_MAX_WIDTH, &a->ro.width))
			return usage_error("bad --width '%s'", optarg);
		break;
	case OPT_MIN_WIDTH:
		if (parse_px(optarg, &a->ro.min_frame_px))
			return usage_error("bad --min-width '%s' (0..1000 px)", optarg);
		break;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct render_args *a)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, 't' },
		{ "rate", required_argument, NULL, 'r' },
		{ "subtitle", required_argument, NULL, OPT_SUBTITLE },
		{ "inverted", no_argument, NULL, OPT_INVERTED },
		{ "flame", no_argument, NULL, OPT_FLAME },
		{ "width", required_argument, NULL, 'w' },
		{ "min-width", required_argument, NULL, OPT_MIN_WIDTH },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, rc;

	optind = 0; /* glibc: full reset, in case another command ran getopt */
	while ((c = getopt_long(argc, argv, "i:f:o:t:r:w:h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return -1;
		}
		if (c == '?' || c == ':') { /* getopt has said what was wrong */
			fprintf(stderr, "Try 'profctl render --help'.\n");
			return 2;
		}
		rc = parse_value(c, a);
		if (rc)
			return rc;
	}
	if (optind < argc && !a->input)
		a->input = argv[optind++];
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!render_format_known(a->format)) {
		fprintf(stderr, "profctl render: unknown format '%s' (%s)\n", a->format,
			render_formats());
		return 2;
	}
	return 0;
}

/* Binary formats would only garble a terminal. */
static bool binary_to_tty(const struct render_args *a)
{
	return render_format_binary(a->format) && (!a->output || !strcmp(a->output, "-")) &&
	       isatty(STDOUT_FILENO);
}

static const char *render_error(int err)
{
	if (err == -ENODATA)
		return "the profile has no Python frames, which pstats needs";
	return strerror(-err);
}

static int run(const struct render_args *a, struct stackset *ss, struct buf *out)
{
	int err;

	if (fileio_load_folded("render", a->input, ss))
		return 1;
	ss->rate_hz = a->rate_hz;
	err = render_format(a->format, ss, &a->ro, out);
	if (!err && out->failed)
		err = -ENOMEM;
	if (err) {
		fprintf(stderr, "profctl render: cannot render %s: %s\n", a->format,
			render_error(err));
		return 1;
	}
	err = fileio_write(a->output, out);
	if (err) {
		fprintf(stderr, "profctl render: cannot write %s: %s\n",
			a->output ? a->output : "stdout", strerror(-err));
		return 1;
	}
	return 0;
}

int cmd_render(int argc, char **argv)
{
	struct render_args a = { .input = NULL, .format = "svg" };
	struct stackset *ss;
	struct buf out;
	int rc;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (!a.input)
		a.input = "-";
	if (binary_to_tty(&a)) {
		fprintf(stderr, "profctl render: %s is binary; write it to a file with -o FILE%s\n",
			a.format, render_format_ext(a.format));
		return 2;
	}
	ss = stackset_new();
	if (!ss) {
		fprintf(stderr, "profctl render: out of memory\n");
		return 1;
	}
	buf_init(&out);
	rc = run(&a, ss, &out);
	buf_free(&out);
	stackset_free(ss);
	return rc;
}
