/* profctl render: offline rendering of a folded-stacks file (ours, or any
 * stackcollapse-*.pl output) in any output format. */
#include <stdio.h>
#include <unistd.h>

#include "buf.h"
#include "commands.h"
#include "fileio.h"
#include "render.h"
#include "render_svg.h"
#include "stackset.h"

void render_usage(FILE *f)
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
		"  -h, --help          show this help\n"
		"--json is refused: render prints no data, only the rendered file.\n",
		render_formats(), SVG_MIN_WIDTH, SVG_MAX_WIDTH, SVG_DEFAULT_WIDTH,
		SVG_DEFAULT_MIN_FRAME_PX);
}

static int check(const struct ctl *ctl, struct cli_args *a)
{
	if (a->noperands && a->input)
		return cli_usage_error(ctl, "unexpected argument '%s'", a->operands[0]);
	if (a->noperands)
		a->input = a->operands[0];
	if (!a->input)
		a->input = "-";
	if (!a->format)
		a->format = "svg";
	if (!render_format_known(a->format))
		return cli_usage_error(ctl, "unknown format '%s' (%s)", a->format, render_formats());
	if (render_format_timeline(a->format))
		return cli_usage_error(ctl, "%s needs each sample's time, which folded stacks do not "
					    "keep: use profctl dump or record --format %s", a->format,
				       a->format);
	/* Binary formats would only garble a terminal. */
	if (render_format_binary(a->format) && fileio_is_stdout(a->output) && isatty(STDOUT_FILENO))
		return cli_usage_error(ctl, "%s is binary; write it to a file with -o FILE%s", a->format,
				       render_format_ext(a->format));
	return 0;
}

int cmd_render(const struct ctl *ctl, struct cli_args *a)
{
	struct stackset *ss;
	struct buf out;
	int rc = check(ctl, a);

	if (rc)
		return rc;
	ss = stackset_new();
	if (!ss) {
		client_error(ctl, "out of memory");
		return 1;
	}
	buf_init(&out);
	rc = fileio_load_folded(ctl, a->input, ss);
	if (!rc) {
		ss->rate_hz = a->rate_hz;
		rc = fileio_render(ctl, a->format, ss, &a->ro, &out);
	}
	if (!rc)
		rc = fileio_save(ctl, a->output, &out);
	buf_free(&out);
	stackset_free(ss);
	return rc;
}
