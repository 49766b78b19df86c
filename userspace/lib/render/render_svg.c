#include "render_svg.h"
#include "utf8.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hashmap.h"
#include "render_svg_assets.h"
#include "render_tree.h"

/* Geometry shared with the JavaScript through data-* attributes. */
#define XPAD 10.0
#define FRAME_H 16
#define CHAR_W 7.25 /* advance of 12px monospace, a little generous */
#define LABEL_PAD 3.0
/* A laptop's browser window shows about this much of a page: a plot
 * taller than that starts as an icicle (root on top), so the first screen
 * holds the root and the widest frames rather than the empty space above
 * a deep flame (PyTorch's imports make 150-frame stacks). */
#define FIRST_SCREEN_PX 700.0

#define MIDDOT " \xc2\xb7 "
#define ENDASH " \xe2\x80\x93 "

struct svg_ctx {
	const struct stackset *ss;
	struct buf *out;
	struct buf scratch;
	double pw;     /* plot width */
	double min_px; /* narrower nodes are coalesced */
	double top;    /* y of the plot area */
	uint64_t total;
	uint32_t maxd; /* deepest drawn depth */
	size_t drawn, coalesced;
	unsigned kinds; /* bit per frame kind drawn */
	bool inverted;
};

static const char *const kind_label[FRAME_KIND_MAX] = {
	[FRAME_UNKNOWN] = "unknown",
	[FRAME_KERNEL] = "kernel",
	[FRAME_NATIVE] = "native",
	[FRAME_PYTHON] = "Python",
	[FRAME_ROOT] = "root",
	[FRAME_GPU] = "GPU",
	[FRAME_WAIT] = "wait",
	[FRAME_TASK] = "asyncio task",
	[FRAME_LOCAL] = "local variable",
};

/* Hue range, saturation and lightness per kind: kernel orange (the
 * flamegraph.pl habit), native red, Python blue, GPU green, wait yellow,
 * asyncio task teal, unknown grey, root lilac.  The name's hash picks the hue and nudges the lightness. */
static const struct {
	double h0, h1, s, l;
} palette[FRAME_KIND_MAX] = {
	[FRAME_UNKNOWN] = { 0, 0, 0.0, 0.74 },
	[FRAME_KERNEL] = { 24, 42, 0.85, 0.60 },
	[FRAME_NATIVE] = { 0, 14, 0.75, 0.64 },
	[FRAME_PYTHON] = { 196, 222, 0.65, 0.66 },
	[FRAME_ROOT] = { 262, 282, 0.22, 0.78 },
	[FRAME_GPU] = { 88, 128, 0.55, 0.56 },
	[FRAME_WAIT] = { 50, 58, 0.90, 0.62 },
	[FRAME_TASK] = { 160, 176, 0.45, 0.64 },
	[FRAME_LOCAL] = { 0, 0, 0.0, 0.74 },
};

static uint32_t node_kind(const struct svg_ctx *c, const struct render_node *n)
{
	uint32_t k;

	if (n->frame == RENDER_TREE_ROOT)
		return FRAME_ROOT;
	k = c->ss->frames[n->frame].kind;
	return k < FRAME_KIND_MAX ? k : FRAME_UNKNOWN;
}

static const char *node_name(const struct svg_ctx *c, const struct render_node *n)
{
	return n->frame == RENDER_TREE_ROOT ? "all" : c->ss->frames[n->frame].name;
}

static double node_px(const struct svg_ctx *c, const struct render_node *n)
{
	return (double)n->total / (double)c->total * c->pw;
}

static void put_color(struct buf *b, uint32_t kind, const char *name)
{
	uint64_t h = hash64_str(name);
	double t1 = (double)(h & 0xffff) / 65536.0, t2 = (double)((h >> 16) & 0xffff) / 65536.0;
	double hue = palette[kind].h0 + t1 * (palette[kind].h1 - palette[kind].h0);
	double s = palette[kind].s, l = palette[kind].l + (t2 - 0.5) * 0.08;
	double ch = (1 - fabs(2 * l - 1)) * s, hp = hue / 60.0;
	double x = ch * (1 - fabs(fmod(hp, 2.0) - 1)), m = l - ch / 2;
	double rgb[3] = { m, m, m };

	/* HSL to RGB: the hue sextant decides which channels get ch and x. */
	switch ((int)hp % 6) {
	case 0: rgb[0] += ch; rgb[1] += x; break;
	case 1: rgb[0] += x; rgb[1] += ch; break;
	case 2: rgb[1] += ch; rgb[2] += x; break;
	case 3: rgb[1] += x; rgb[2] += ch; break;
	case 4: rgb[0] += x; rgb[2] += ch; break;
	default: rgb[0] += ch; rgb[2] += x; break;
	}
	buf_printf(b, "#%02x%02x%02x", (unsigned)lround(rgb[0] * 255), (unsigned)lround(rgb[1] * 255),
		   (unsigned)lround(rgb[2] * 255));
}

static void put_text(struct svg_ctx *c, const char *s, size_t max)
{
	utf8_put_xml_cut(c->out, &c->scratch, s, max);
}

static void fmt_count(char out[32], uint64_t v)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v), i, o = 0;

	for (i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = digits[i];
	}
	out[o] = '\0';
}

static const char *unit(const struct svg_ctx *c)
{
	return c->ss->unit && c->ss->unit[0] ? c->ss->unit : "samples";
}

static int measure_node(const struct render_node *n, void *arg)
{
	struct svg_ctx *c = arg;

	if (node_px(c, n) < c->min_px) {
		c->coalesced++;
		return 0;
	}
	c->drawn++;
	if (n->depth > c->maxd)
		c->maxd = n->depth;
	c->kinds |= 1u << node_kind(c, n);
	return 0;
}

static double node_y(const struct svg_ctx *c, uint32_t depth)
{
	return c->top + FRAME_H * (double)(c->inverted ? depth : c->maxd - depth);
}

/* "12,345" (the unit follows), or for a memory profile "12.3 MiB"
 * (*has_unit set). */
static void fmt_amount(const struct svg_ctx *c, char out[32], uint64_t v, bool *has_unit)
{
	*has_unit = !strcmp(unit(c), "bytes");
	if (*has_unit)
		snprintf(out, 32, "%.1f MiB", (double)v / (1024.0 * 1024.0));
	else
		fmt_count(out, v);
}

static void put_node_title(struct svg_ctx *c, const struct render_node *n)
{
	char cnt[32], self[32];
	bool has_unit;

	fmt_amount(c, cnt, n->total, &has_unit);
	fmt_amount(c, self, n->self, &has_unit);
	buf_puts(c->out, "<title>");
	put_text(c, node_name(c, n), SIZE_MAX);
	buf_printf(c->out, "\n%s", cnt);
	if (!has_unit) {
		buf_puts(c->out, " ");
		put_text(c, unit(c), SIZE_MAX);
	}
	buf_printf(c->out, " (%.2f%%), self %s</title>", 100.0 * (double)n->total / (double)c->total,
		   self);
}

static int emit_node(const struct render_node *n, void *arg)
{
	struct svg_ctx *c = arg;
	double w = node_px(c, n), x, y = node_y(c, n->depth);
	double fit = floor((w - 2 * LABEL_PAD) / CHAR_W);

	if (w < c->min_px)
		return 0;
	x = XPAD + (double)n->start / (double)c->total * c->pw;
	buf_printf(c->out, "<g data-s=\"%llu\" data-n=\"%llu\" data-d=\"%u\">",
		   (unsigned long long)n->start, (unsigned long long)n->total, n->depth);
	put_node_title(c, n);
	buf_printf(c->out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"", x, y, w,
		   FRAME_H - 1);
	put_color(c->out, node_kind(c, n), node_name(c, n));
	buf_puts(c->out, "\"/>");
	/* No text element at all for labels too narrow to read: keeps the
	 * DOM small; the script adds one when a zoom makes room. */
	if (fit >= 3) {
		buf_printf(c->out, "<text x=\"%.2f\" y=\"%.1f\">", x + LABEL_PAD, y + FRAME_H - 4.5);
		put_text(c, node_name(c, n), (size_t)fit);
		buf_puts(c->out, "</text>");
	}
	buf_puts(c->out, "</g>\n");
	return c->out->failed ? -ENOMEM : 0;
}

static void put_time(struct buf *b, uint64_t ns, bool with_date)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	char s[64];

	if (!gmtime_r(&t, &tm) ||
	    !strftime(s, sizeof(s), with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm))
		return;
	buf_puts(b, s);
}

static bool same_day(uint64_t a_ns, uint64_t b_ns)
{
	return a_ns / 1000000000u / 86400 == b_ns / 1000000000u / 86400;
}

/* "cpu profile · <when> · 12,345 samples · 99 Hz": what, when, how much. */
static void put_info(struct svg_ctx *c, struct buf *b)
{
	const struct stackset *ss = c->ss;
	bool has_unit;
	char cnt[32];

	if (ss->type && ss->type[0])
		buf_printf(b, "%s profile" MIDDOT, ss->type);
	if (ss->start_ns) {
		put_time(b, ss->start_ns, true);
		if (ss->end_ns > ss->start_ns) {
			buf_puts(b, ENDASH);
			put_time(b, ss->end_ns, !same_day(ss->start_ns, ss->end_ns));
		}
		buf_puts(b, " UTC");
		if (ss->end_ns > ss->start_ns)
			buf_printf(b, " (%.1f s)", (double)(ss->end_ns - ss->start_ns) / 1e9);
		buf_puts(b, MIDDOT);
	}
	fmt_amount(c, cnt, c->total, &has_unit);
	buf_printf(b, has_unit ? "%s" : "%s %s", cnt, unit(c));
	if (ss->rate_hz)
		buf_printf(b, MIDDOT "%u Hz", ss->rate_hz);
	if (c->coalesced) {
		fmt_count(cnt, c->coalesced);
		buf_printf(b, MIDDOT "%s frames under %.2g px not drawn", cnt, c->min_px);
	}
}

static void put_centered(struct svg_ctx *c, const char *id, double y, const char *s)
{
	buf_printf(c->out, "<text id=\"%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", id,
		   XPAD + c->pw / 2, y);
	put_text(c, s, SIZE_MAX);
	buf_puts(c->out, "</text>\n");
}

static void put_legend(struct svg_ctx *c, double y)
{
	/* Display order: most common kinds first. */
	static const uint32_t order[] = { FRAME_PYTHON, FRAME_NATIVE,  FRAME_KERNEL,
					  FRAME_GPU,	FRAME_WAIT,    FRAME_TASK,    FRAME_UNKNOWN,
					  FRAME_ROOT };
	double x = 130;
	size_t i;

	buf_puts(c->out, "<g id=\"legend\">");
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		uint32_t k = order[i];

		if (!(c->kinds & (1u << k)))
			continue;
		buf_printf(c->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"", x,
			   y - 10);
		put_color(c->out, k, kind_label[k]);
		buf_printf(c->out, "\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>", x + 16, y,
			   kind_label[k]);
		x += 16 + CHAR_W * (double)strlen(kind_label[k]) + 16;
	}
	buf_puts(c->out, "</g>\n");
}

static void put_controls(struct svg_ctx *c, double y)
{
	double right = XPAD + c->pw;

	buf_printf(c->out,
		   "<text id=\"unzoom\" class=\"btn hide\" x=\"%.1f\" y=\"%.1f\">Reset Zoom</text>\n"
		   "<text id=\"unsearch\" class=\"btn hide\" x=\"%.1f\" y=\"%.1f\" "
		   "text-anchor=\"end\">Reset Search</text>\n"
		   "<text id=\"invert\" class=\"btn\" x=\"%.1f\" y=\"%.1f\" "
		   "text-anchor=\"end\">Invert</text>\n"
		   "<text id=\"search\" class=\"btn\" x=\"%.1f\" y=\"%.1f\" "
		   "text-anchor=\"end\">Search</text>\n",
		   XPAD, y, right - 140, y, right - 70, y, right, y);
}

/* Baseline of the legend and buttons row; the plot starts below it. */
static double controls_y(const struct svg_options *o)
{
	return o->subtitle && o->subtitle[0] ? 90 : 70;
}

/* Title, subtitle, info line, legend and buttons. */
static void put_header(struct svg_ctx *c, const struct svg_options *o, double width,
		       double height)
{
	const char *title = o->title ? o->title : c->ss->title ? c->ss->title : "Flame Graph";
	struct buf info;
	double y = 24;

	buf_printf(c->out,
		   "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		   "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		   "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n<title>",
		   width, height, width, height);
	put_text(c, title, SIZE_MAX);
	buf_printf(c->out, "</title>\n<style><![CDATA[%s]]></style>\n", render_svg_css);
	buf_printf(c->out, "<rect class=\"bg\" width=\"100%%\" height=\"100%%\"/>\n");
	put_centered(c, "title", y, title);
	if (o->subtitle && o->subtitle[0])
		put_centered(c, "subtitle", y += 20, o->subtitle);
	buf_init(&info);
	put_info(c, &info);
	put_centered(c, "info", y += 20, buf_cstr(&info) ? info.data : "");
	buf_free(&info);
	put_legend(c, controls_y(o));
	put_controls(c, controls_y(o));
}

static int put_frames(struct svg_ctx *c, const struct render_tree *t)
{
	int err;

	buf_printf(c->out,
		   "<g id=\"frames\" data-total=\"%llu\" data-xpad=\"%.1f\" data-pw=\"%.1f\" "
		   "data-fh=\"%d\" data-top=\"%.1f\" data-maxd=\"%u\" data-cw=\"%.2f\" "
		   "data-inv=\"%d\" data-unit=\"",
		   (unsigned long long)c->total, XPAD, c->pw, FRAME_H, c->top, c->maxd, CHAR_W,
		   c->inverted);
	put_text(c, unit(c), SIZE_MAX);
	buf_puts(c->out, "\">\n");
	err = c->total ? render_tree_walk(t, emit_node, c) : 0;
	buf_puts(c->out, "</g>\n");
	if (!c->total)
		put_centered(c, "empty", c->top + 24, "no samples");
	return err;
}

static int render(struct svg_ctx *c, const struct svg_options *o, const struct render_tree *t)
{
	double width = c->pw + 2 * XPAD, plot_h, height;
	int err;

	if (c->total) {
		err = render_tree_walk(t, measure_node, c);
		if (err)
			return err;
	}
	c->top = controls_y(o) + 16;
	plot_h = c->total ? FRAME_H * (double)(c->maxd + 1) : 40;
	if (!o->flame && c->top + plot_h > FIRST_SCREEN_PX)
		c->inverted = true;
	height = c->top + plot_h + 34;
	put_header(c, o, width, height);
	err = put_frames(c, t);
	if (err)
		return err;
	buf_printf(c->out,
		   "<text id=\"details\" x=\"%.1f\" y=\"%.1f\"> </text>\n"
		   "<text id=\"matched\" class=\"hide\" x=\"%.1f\" y=\"%.1f\" "
		   "text-anchor=\"end\"> </text>\n",
		   XPAD, height - 12, XPAD + c->pw, height - 12);
	buf_printf(c->out, "<script type=\"text/ecmascript\"><![CDATA[%s]]></script>\n</svg>\n",
		   render_svg_js);
	return c->out->failed ? -ENOMEM : 0;
}

int render_svg(const struct stackset *ss, const struct svg_options *o, struct buf *out)
{
	static const struct svg_options defaults;
	struct svg_ctx c = { .ss = ss, .out = out };
	struct render_tree t;
	uint32_t width;
	int err;

	if (!o)
		o = &defaults;
	width = o->width ? o->width : SVG_DEFAULT_WIDTH;
	if (width < SVG_MIN_WIDTH || width > SVG_MAX_WIDTH)
		return -EINVAL;
	c.pw = width - 2 * XPAD;
	c.min_px = o->min_frame_px > 0 ? o->min_frame_px : SVG_DEFAULT_MIN_FRAME_PX;
	if (o->min_frame_px < 0)
		c.min_px = 0;
	c.inverted = o->inverted;
	err = render_tree_init(&t, ss, RENDER_ORDER_TREE);
	if (err)
		return err;
	c.total = t.total;
	buf_init(&c.scratch);
	err = render(&c, o, &t);
	buf_free(&c.scratch);
	render_tree_free(&t);
	return err;
}
