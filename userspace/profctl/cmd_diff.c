/* profctl diff: a differential flamegraph of two profiles, before and
 * after a change: two folded-stacks files, or two time windows of a
 * process from profd (--pid N --before 10m..5m --after 5m..). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "commands.h"
#include "duration.h"
#include "protocol.h"
#include "fileio.h"
#include "jsonw.h"
#include "render_diff.h"
#include "render_svg.h"
#include "stackset.h"

void diff_usage(FILE *f)
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
		"  -j, --json          the summary as JSON on stdout (needs -o FILE)\n"
		"  -h, --help          show this help\n",
		SVG_MIN_WIDTH, SVG_MAX_WIDTH, SVG_DEFAULT_WIDTH, SVG_DEFAULT_MIN_FRAME_PX);
}

/* Files or windows, each with its partner; stdout free for --json. */
static int check(const struct ctl *ctl, struct cli_args *a)
{
	if (ctl->json && fileio_is_stdout(a->output))
		return cli_usage_error(ctl, "--json puts the summary on stdout: write the SVG with -o FILE");
	if (a->req.npids) {
		if (!a->before || !a->after || a->noperands)
			return cli_usage_error(ctl, "--pid needs --before WINDOW and --after WINDOW, no files");
		return 0;
	}
	if (a->before || a->after)
		return cli_usage_error(ctl, "--before and --after go with --pid");
	if (a->noperands != 2)
		return cli_usage_error(ctl, a->noperands < 2 ? "needs BEFORE and AFTER folded files"
							      : "takes exactly two files");
	a->before = a->operands[0];
	a->after = a->operands[1];
	if (!strcmp(a->before, "-") && !strcmp(a->after, "-"))
		return cli_usage_error(ctl, "only one of BEFORE and AFTER can be stdin");
	return 0;
}

static int print_summary(const struct ctl *ctl, const char *output, const struct diff_summary *s)
{
	struct jsonw w;

	if (!ctl->json) {
		client_note(ctl, "before %llu, after %llu samples; %zu frames grew, %zu shrank, "
				 "%zu unchanged; %zu paths (%llu samples) only in before",
			    (unsigned long long)s->before_total, (unsigned long long)s->after_total,
			    s->grew, s->shrank, s->same, s->gone, (unsigned long long)s->gone_samples);
		return 0;
	}
	jsonw_init(&w, 1);
	jsonw_object(&w);
	jsonw_key_str(&w, "output", output);
	jsonw_key_u64(&w, "before_total", s->before_total);
	jsonw_key_u64(&w, "after_total", s->after_total);
	jsonw_key_u64(&w, "grew", s->grew);
	jsonw_key_u64(&w, "shrank", s->shrank);
	jsonw_key_u64(&w, "unchanged", s->same);
	jsonw_key_u64(&w, "only_before_paths", s->gone);
	jsonw_key_u64(&w, "only_before_samples", s->gone_samples);
	jsonw_end(&w);
	return client_print_json(ctl, &w);
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

static int fetch_window(const struct ctl *ctl, const struct cli_args *a, const char *w,
			struct stackset **out)
{
	struct proto_dump_req r = { .pids = a->req.pids, .npids = a->req.npids };
	uint64_t now = clock_realtime_ns();

	if (parse_window(w, now, &r.since_ns, &r.until_ns)) {
		client_error(ctl, "bad window '%s' (e.g. 10m..5m or 5m)", w);
		return -EINVAL;
	}
	return client_dump(ctl, &r, out);
}

static int load_file(const struct ctl *ctl, const char *path, struct stackset **out)
{
	*out = stackset_new();
	if (!*out) {
		client_error(ctl, "out of memory");
		return 1;
	}
	return fileio_load_folded(ctl, path, *out);
}

/* The two profiles: windows from profd with --pid, else files. */
static int load(const struct ctl *ctl, const struct cli_args *a, struct stackset **before,
		struct stackset **after)
{
	if (a->req.npids)
		return fetch_window(ctl, a, a->before, before) || fetch_window(ctl, a, a->after, after);
	return load_file(ctl, a->before, before) || load_file(ctl, a->after, after);
}

/* "what: 10m..5m -> 5m.." for windows, "before.folded -> after.folded"
 * for files. */
static const char *subtitle(const struct cli_args *a, const struct stackset *before,
			    const struct stackset *after, char *buf, size_t size)
{
	if (a->ro.subtitle)
		return a->ro.subtitle;
	if (a->req.npids)
		snprintf(buf, size, "%s: %s \xe2\x86\x92 %s", after->title ? after->title : "",
			 a->before, a->after);
	else
		snprintf(buf, size, "%s \xe2\x86\x92 %s", before->title ? before->title : "stdin",
			 after->title ? after->title : "stdin");
	return buf;
}

static int render(const struct ctl *ctl, const struct cli_args *a, const struct stackset *before,
		  const struct stackset *after, struct buf *out, struct diff_summary *sum)
{
	struct diff_options o = { .title = a->ro.title, .width = a->ro.width,
				  .absolute = a->absolute, .min_frame_px = a->ro.min_frame_px };
	struct stackset *split[2] = { NULL, NULL };
	char sub[512];
	int err;

	o.subtitle = subtitle(a, before, after, sub, sizeof(sub));
	/* Signed profiles (mmap): compared as mapped and unmapped side by side. */
	if (stackset_signed(before) || stackset_signed(after)) {
		before = split[0] = stackset_split_signs(before);
		after = split[1] = stackset_split_signs(after);
	}
	err = before && after ? render_diff(before, after, &o, out, sum) : -ENOMEM;
	stackset_free(split[0]);
	stackset_free(split[1]);
	if (err)
		client_error(ctl, "cannot render: %s", strerror(-err));
	return err ? 1 : 0;
}

int cmd_diff(const struct ctl *ctl, struct cli_args *a)
{
	struct stackset *before = NULL, *after = NULL;
	struct diff_summary sum;
	struct buf out;
	int rc = check(ctl, a);

	if (rc)
		return rc;
	buf_init(&out);
	rc = load(ctl, a, &before, &after) ? 1 : render(ctl, a, before, after, &out, &sum);
	if (!rc)
		rc = fileio_save(ctl, a->output, &out);
	if (!rc && !a->quiet)
		rc = print_summary(ctl, a->output, &sum);
	buf_free(&out);
	stackset_free(before);
	stackset_free(after);
	return rc;
}
