#include "render.h"

#include <errno.h>
#include <string.h>

#include "render_folded.h"
#include "render_gecko.h"
#include "render_json.h"
#include "render_pprof.h"
#include "render_pstats.h"
#include "render_speedscope.h"
#include "render_svg.h"
#include "render_trace.h"

static int do_svg(const struct stackset *ss, const struct render_opts *o, struct buf *out)
{
	struct svg_options so = {
		.title = o->title,
		.subtitle = o->subtitle,
		.width = o->width,
		.inverted = o->inverted,
		.flame = o->flame,
		.min_frame_px = o->min_frame_px,
	};

	return render_svg(ss, &so, out);
}

static int do_folded(const struct stackset *ss, const struct render_opts *o, struct buf *out)
{
	(void)o;
	return render_folded(ss, out);
}

#define RENDER_PLAIN(fn)                                                                           \
	static int do_##fn(const struct stackset *ss, const struct render_opts *o,                 \
			   struct buf *out)                                                        \
	{                                                                                          \
		(void)o;                                                                           \
		return render_##fn(ss, out);                                                       \
	}
RENDER_PLAIN(pprof)
RENDER_PLAIN(speedscope)
RENDER_PLAIN(pstats)
RENDER_PLAIN(json)

static const struct render_format_def {
	const char *name, *ext;
	bool binary;
	bool widths; /* draws counts as widths: a signed profile is split first */
	/* NULL: drawn from a timeline (render_timeline), not a profile. */
	int (*fn)(const struct stackset *ss, const struct render_opts *o, struct buf *out);
	int (*timeline)(const struct tlset *t, struct buf *out);
} formats[] = {
	{ "folded", ".folded", false, false, do_folded, NULL },
	{ "svg", ".svg", false, true, do_svg, NULL },
	{ "pprof", ".pb.gz", true, false, do_pprof, NULL },
	{ "speedscope", ".speedscope.json", false, true, do_speedscope, NULL },
	{ "pstats", ".pstats", true, true, do_pstats, NULL },
	{ "json", ".json", false, false, do_json, NULL },
	{ "gecko", ".gecko.json", false, false, NULL, render_gecko },
	{ "trace", ".trace.json", false, false, NULL, render_trace },
};

static const struct render_format_def *find(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(formats[i].name, name))
			return &formats[i];
	return NULL;
}

int render_format(const char *format, const struct stackset *ss, const struct render_opts *o,
		  struct buf *out)
{
	static const struct render_opts defaults;
	const struct render_format_def *f = find(format);
	struct stackset view, *split = NULL;
	int err;

	if (!f || !f->fn)
		return -EINVAL;
	if (!o)
		o = &defaults;
	/* Negative widths mean nothing: mapped and unmapped side by side. */
	if (f->widths && stackset_signed(ss)) {
		split = stackset_split_signs(ss);
		if (!split)
			return -ENOMEM;
		ss = split;
	}
	/* A shallow copy with another title: renderers only read. */
	view = *ss;
	if (o->title)
		view.title = (char *)o->title;
	err = f->fn(&view, o, out);
	stackset_free(split);
	return err;
}

const char *render_formats(void)
{
	return "folded, svg, pprof, speedscope, pstats, json, gecko, trace";
}

bool render_format_known(const char *format)
{
	return find(format) != NULL;
}

const char *render_format_ext(const char *format)
{
	const struct render_format_def *f = find(format);

	return f ? f->ext : NULL;
}

bool render_format_binary(const char *format)
{
	const struct render_format_def *f = find(format);

	return f && f->binary;
}

bool render_format_timeline(const char *format)
{
	const struct render_format_def *f = find(format);

	return f && f->timeline;
}

int render_timeline(const char *format, const struct tlset *t, struct buf *out)
{
	const struct render_format_def *f = find(format);

	if (!f || !f->timeline)
		return -EINVAL;
	return f->timeline(t, out);
}
