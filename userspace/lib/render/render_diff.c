#include "render_diff.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "difftree.h"
#include "render_svg.h"
#include "render_svg_assets.h"
#include "utf8.h"

/* Geometry as in render_svg, whose script this SVG reuses. */
#define XPAD 10.0
#define FRAME_H 16
#define CHAR_W 7.25
#define LABEL_PAD 3.0
#define LINE_H 16
#define MIDDOT " \xc2\xb7 "
/* Changes smaller than this (in shares or counts) count as none. */
#define DIFF_EPSILON 1e-12

static const char diff_css[] = "#gone text { fill: #333; }\n#gone .head { font-weight: bold; }\n";

struct diff_gone {
	uint32_t frame, parent;
	uint64_t before, seq;
};

struct diff_ctx {
	const struct difftree *t;
	const struct diff_options *o;
	struct buf *out;
	struct buf scratch;
	double pw, min_px, top;
	uint32_t maxd;
	double max_delta; /* largest |change| drawn, for color depth */
	struct diff_gone *gone;
	size_t ngone, gone_cap;
	struct diff_summary sum;
};

static const char *frame_name(const struct diff_ctx *c, uint32_t frame)
{
	return frame == RENDER_TREE_ROOT ? "all" : c->t->frames->frames[frame].name;
}

static double share(uint64_t v, uint64_t total)
{
	return total ? (double)v / (double)total : 0.0;
}

/* The change that colors a node: in shares of each total, or counts. */
static double delta(const struct diff_ctx *c, const struct difftree_node *n)
{
	if (c->o->absolute)
		return (double)n->after - (double)n->before;
	return share(n->after, c->t->after_total) - share(n->before, c->t->before_total);
}

static double node_px(const struct diff_ctx *c, const struct difftree_node *n)
{
	return share(n->after, c->t->after_total) * c->pw;
}

static bool drawn(const struct diff_ctx *c, const struct difftree_node *n)
{
	return n->after && node_px(c, n) >= c->min_px;
}

static void put_text(struct diff_ctx *c, const char *s, size_t max)
{
	utf8_put_xml_cut(c->out, &c->scratch, s, max);
}

/* Red for growth, blue for shrinkage, white-to-deep by |d| / max. */
static void put_fill(struct diff_ctx *c, double d)
{
	double t;
	unsigned v;

	if (fabs(d) <= DIFF_EPSILON || c->max_delta <= 0) {
		buf_puts(c->out, "#d9d9d9");
		return;
	}
	t = 0.15 + 0.85 * fmin(fabs(d) / c->max_delta, 1.0);
	v = (unsigned)lround(255 * (1 - 0.8 * t));
	if (d > 0)
		buf_printf(c->out, "#ff%02x%02x", v, v);
	else
		buf_printf(c->out, "#%02x%02xff", v, v);
}

/* A node only "before" has: keep it unless an ancestor is also gone
 * (then the ancestor stands for it).  Its descendants were closed after
 * it opened, so they are the entries with a larger seq at the end. */
static int note_gone(struct diff_ctx *c, const struct difftree_node *n)
{
	if (n->frame == RENDER_TREE_ROOT) /* its gone children are the list */
		return 0;
	while (c->ngone && c->gone[c->ngone - 1].seq > n->seq)
		c->ngone--;
	if (c->ngone == c->gone_cap) {
		size_t ncap = c->gone_cap ? c->gone_cap * 2 : 32;
		void *p = realloc(c->gone, ncap * sizeof(*c->gone));

		if (!p)
			return -ENOMEM;
		c->gone = p;
		c->gone_cap = ncap;
	}
	c->gone[c->ngone++] = (struct diff_gone){
		.frame = n->frame, .parent = n->parent, .before = n->before, .seq = n->seq
	};
	return 0;
}

static int measure_node(const struct difftree_node *n, void *arg)
{
	struct diff_ctx *c = arg;
	double d = delta(c, n);

	if (!n->after)
		return note_gone(c, n);
	if (!drawn(c, n))
		return 0;
	if (n->depth > c->maxd)
		c->maxd = n->depth;
	if (n->frame == RENDER_TREE_ROOT)
		return 0;
	c->max_delta = fmax(c->max_delta, fabs(d));
	if (d > DIFF_EPSILON)
		c->sum.grew++;
	else if (d < -DIFF_EPSILON)
		c->sum.shrank++;
	else
		c->sum.same++;
	return 0;
}

static void put_counts(struct diff_ctx *c, const struct difftree_node *n)
{
	double pp = 100.0 * (share(n->after, c->t->after_total) -
			     share(n->before, c->t->before_total));

	bool up = n->after >= n->before;

	buf_printf(c->out, "before: %llu (%.2f%%)  after: %llu (%.2f%%)  delta: %c%llu (%+.2f pp)",
		   (unsigned long long)n->before, 100.0 * share(n->before, c->t->before_total),
		   (unsigned long long)n->after, 100.0 * share(n->after, c->t->after_total),
		   up ? '+' : '-',
		   (unsigned long long)(up ? n->after - n->before : n->before - n->after), pp);
}

static double node_y(const struct diff_ctx *c, uint32_t depth)
{
	return c->top + FRAME_H * (double)(c->maxd - depth);
}

static int emit_node(const struct difftree_node *n, void *arg)
{
	struct diff_ctx *c = arg;
	double w = node_px(c, n), x, y = node_y(c, n->depth);
	double fit = floor((w - 2 * LABEL_PAD) / CHAR_W);

	if (!drawn(c, n))
		return 0;
	x = XPAD + share(n->start, c->t->after_total) * c->pw;
	buf_printf(c->out, "<g data-s=\"%llu\" data-n=\"%llu\" data-d=\"%u\"><title>",
		   (unsigned long long)n->start, (unsigned long long)n->after, n->depth);
	put_text(c, frame_name(c, n->frame), SIZE_MAX);
	buf_put_u8(c->out, '\n');
	put_counts(c, n);
	buf_printf(c->out,
		   "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"", x, y,
		   w, FRAME_H - 1);
	put_fill(c, n->frame == RENDER_TREE_ROOT ? 0 : delta(c, n));
	buf_puts(c->out, "\"/>");
	if (fit >= 3) {
		buf_printf(c->out, "<text x=\"%.2f\" y=\"%.1f\">", x + LABEL_PAD,
			   y + FRAME_H - 4.5);
		put_text(c, frame_name(c, n->frame), (size_t)fit);
		buf_puts(c->out, "</text>");
	}
	buf_puts(c->out, "</g>\n");
	return c->out->failed ? -ENOMEM : 0;
}

static int cmp_gone(const void *pa, const void *pb)
{
	const struct diff_gone *a = pa, *b = pb;

	if (a->before != b->before)
		return a->before > b->before ? -1 : 1;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

static size_t gone_listed(const struct diff_ctx *c)
{
	return c->ngone < DIFF_GONE_LISTED ? c->ngone : DIFF_GONE_LISTED;
}

static void put_gone(struct diff_ctx *c, double y)
{
	size_t i;

	if (!c->ngone)
		return;
	buf_printf(c->out, "<g id=\"gone\"><text class=\"head\" x=\"%.1f\" y=\"%.1f\">", XPAD, y);
	buf_printf(c->out, "Only in before (not drawn): %zu path%s, %llu samples (%.2f%%)</text>\n",
		   c->sum.gone, c->sum.gone == 1 ? "" : "s",
		   (unsigned long long)c->sum.gone_samples,
		   100.0 * share(c->sum.gone_samples, c->t->before_total));
	for (i = 0; i < gone_listed(c); i++) {
		const struct diff_gone *g = &c->gone[i];

		buf_printf(c->out, "<text x=\"%.1f\" y=\"%.1f\">", XPAD + 16,
			   y + LINE_H * (double)(i + 1));
		put_text(c, frame_name(c, g->frame), 80);
		buf_puts(c->out, "  \xe2\x86\x90 ");
		put_text(c, frame_name(c, g->parent), 40);
		buf_printf(c->out, ": before %llu (%.2f%%), after 0</text>\n",
			   (unsigned long long)g->before,
			   100.0 * share(g->before, c->t->before_total));
	}
	buf_puts(c->out, "</g>\n");
}

static void put_centered(struct diff_ctx *c, const char *id, double y, const char *s)
{
	buf_printf(c->out, "<text id=\"%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", id,
		   XPAD + c->pw / 2, y);
	put_text(c, s, SIZE_MAX);
	buf_puts(c->out, "</text>\n");
}

static void put_info(struct diff_ctx *c)
{
	char info[256];

	snprintf(info, sizeof(info),
		 "before: %llu" MIDDOT "after: %llu" MIDDOT "widths: after" MIDDOT
		 "colors: change in %s",
		 (unsigned long long)c->t->before_total, (unsigned long long)c->t->after_total,
		 c->o->absolute ? "count" : "share of total");
	put_centered(c, "info", c->o->subtitle && c->o->subtitle[0] ? 64 : 44, info);
}

static double controls_y(const struct diff_ctx *c)
{
	return c->o->subtitle && c->o->subtitle[0] ? 90 : 70;
}

static void put_legend(struct diff_ctx *c, double y)
{
	static const struct {
		const char *label, *color;
	} keys[] = { { "grew", "#ff3333" }, { "shrank", "#3333ff" }, { "same", "#d9d9d9" } };
	double x = 130;
	size_t i;

	buf_puts(c->out, "<g id=\"legend\">");
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		buf_printf(c->out,
			   "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\">%s</text>",
			   x, y - 10, keys[i].color, x + 16, y, keys[i].label);
		x += 16 + CHAR_W * (double)strlen(keys[i].label) + 16;
	}
	buf_puts(c->out, "</g>\n");
}

static void put_controls(struct diff_ctx *c, double y)
{
	double right = XPAD + c->pw;

	buf_printf(c->out,
		   "<text id=\"unzoom\" class=\"btn hide\" x=\"%.1f\" y=\"%.1f\">"
		   "Reset Zoom</text>\n"
		   "<text id=\"unsearch\" class=\"btn hide\" x=\"%.1f\" y=\"%.1f\" "
		   "text-anchor=\"end\">Reset Search</text>\n"
		   "<text id=\"invert\" class=\"btn\" x=\"%.1f\" y=\"%.1f\" "
		   "text-anchor=\"end\">Invert</text>\n"
		   "<text id=\"search\" class=\"btn\" x=\"%.1f\" y=\"%.1f\" "
		   "text-anchor=\"end\">Search</text>\n",
		   XPAD, y, right - 140, y, right - 70, y, right, y);
}

static void put_header(struct diff_ctx *c, double width, double height)
{
	const char *title = c->o->title ? c->o->title : "Differential flame graph";

	buf_printf(c->out,
		   "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		   "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		   "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n<title>",
		   width, height, width, height);
	put_text(c, title, SIZE_MAX);
	buf_printf(c->out, "</title>\n<style><![CDATA[%s%s]]></style>\n", render_svg_css, diff_css);
	buf_puts(c->out, "<rect class=\"bg\" width=\"100%\" height=\"100%\"/>\n");
	put_centered(c, "title", 24, title);
	if (c->o->subtitle && c->o->subtitle[0])
		put_centered(c, "subtitle", 44, c->o->subtitle);
	put_info(c);
	put_legend(c, controls_y(c));
	put_controls(c, controls_y(c));
}

static int put_frames(struct diff_ctx *c)
{
	int err = 0;

	buf_printf(c->out,
		   "<g id=\"frames\" data-total=\"%llu\" data-xpad=\"%.1f\" data-pw=\"%.1f\" "
		   "data-fh=\"%d\" data-top=\"%.1f\" data-maxd=\"%u\" data-cw=\"%.2f\" "
		   "data-inv=\"0\" data-unit=\"samples\">\n",
		   (unsigned long long)c->t->after_total, XPAD, c->pw, FRAME_H, c->top, c->maxd,
		   CHAR_W);
	if (c->t->after_total)
		err = difftree_walk(c->t, emit_node, c);
	buf_puts(c->out, "</g>\n");
	if (!c->t->after_total)
		put_centered(c, "empty", c->top + 24, "no samples after");
	return err;
}

static int render(struct diff_ctx *c)
{
	double width = c->pw + 2 * XPAD, plot_h, gone_h, height;
	size_t i;
	int err;

	err = difftree_walk(c->t, measure_node, c);
	if (err)
		return err;
	if (c->ngone) /* NULL then, which qsort must not see */
		qsort(c->gone, c->ngone, sizeof(*c->gone), cmp_gone);
	c->sum.gone = c->ngone;
	for (i = 0; i < c->ngone; i++)
		c->sum.gone_samples += c->gone[i].before;
	c->top = controls_y(c) + 16;
	plot_h = c->t->after_total ? FRAME_H * (double)(c->maxd + 1) : 40;
	gone_h = c->ngone ? LINE_H * (double)(gone_listed(c) + 1) + 8 : 0;
	height = c->top + plot_h + gone_h + 34;
	put_header(c, width, height);
	err = put_frames(c);
	if (err)
		return err;
	put_gone(c, c->top + plot_h + 20);
	buf_printf(c->out,
		   "<text id=\"details\" x=\"%.1f\" y=\"%.1f\"> </text>\n"
		   "<text id=\"matched\" class=\"hide\" x=\"%.1f\" y=\"%.1f\" "
		   "text-anchor=\"end\"> </text>\n",
		   XPAD, height - 12, XPAD + c->pw, height - 12);
	buf_printf(c->out, "<script type=\"text/ecmascript\"><![CDATA[%s]]></script>\n</svg>\n",
		   render_svg_js);
	return c->out->failed ? -ENOMEM : 0;
}

int render_diff(const struct stackset *before, const struct stackset *after,
		const struct diff_options *o, struct buf *out, struct diff_summary *sum)
{
	static const struct diff_options defaults;
	struct diff_ctx c = { .out = out };
	struct difftree t;
	uint32_t width;
	int err;

	c.o = o ? o : &defaults;
	width = c.o->width ? c.o->width : SVG_DEFAULT_WIDTH;
	if (width < SVG_MIN_WIDTH || width > SVG_MAX_WIDTH)
		return -EINVAL;
	c.pw = width - 2 * XPAD;
	c.min_px = c.o->min_frame_px > 0 ? c.o->min_frame_px : SVG_DEFAULT_MIN_FRAME_PX;
	if (c.o->min_frame_px < 0)
		c.min_px = 0;
	err = difftree_init(&t, before, after);
	if (err)
		return err;
	c.t = &t;
	c.sum.before_total = t.before_total;
	c.sum.after_total = t.after_total;
	buf_init(&c.scratch);
	err = render(&c);
	if (!err && sum)
		*sum = c.sum;
	buf_free(&c.scratch);
	free(c.gone);
	difftree_free(&t);
	return err;
}
