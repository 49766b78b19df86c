#include "render_speedscope.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "framename.h"
#include "render_tree.h"
#include "utf8.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

/* Frame ids -> speedscope indices, numbered in order of first use so
 * output does not depend on interning order and unused frames vanish. */
struct ssc_ctx {
	const struct stackset *ss;
	struct render_tree tree;
	struct render_frames fr;
};

static void put_frame(struct buf *out, const struct ss_frame *f)
{
	struct framename_py py;

	buf_puts(out, "{\"name\":");
	if (f->kind == FRAME_PYTHON && framename_python(f->name, &py)) {
		utf8_put_json_n(out, py.func, py.func_len);
		buf_puts(out, ",\"file\":");
		utf8_put_json_n(out, py.file, py.file_len);
		buf_printf(out, ",\"line\":%llu}", (unsigned long long)py.line);
	} else {
		utf8_put_json(out, f->name);
		buf_put_u8(out, '}');
	}
}

static const char *value_unit(const struct stackset *ss)
{
	if (ss->unit && (!strcmp(ss->unit, "nanoseconds") || !strcmp(ss->unit, "bytes")))
		return ss->unit;
	return "none";
}

static void put_profile_head(struct ssc_ctx *c, struct buf *out, const char *name)
{
	buf_puts(out, "\"profiles\":[{\"type\":\"sampled\",\"name\":");
	utf8_put_json(out, name);
	buf_printf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\n", value_unit(c->ss),
		   (unsigned long long)c->tree.total);
}

static void put_samples(struct ssc_ctx *c, struct buf *out)
{
	size_t k;
	uint32_t i;

	buf_puts(out, "\"samples\":[");
	for (k = 0; k < c->tree.n; k++) {
		const struct ss_stack *st = &c->ss->stacks[c->tree.order[k]];

		buf_puts(out, k ? ",\n[" : "\n[");
		for (i = 0; i < st->depth; i++)
			buf_printf(out, i ? ",%u" : "%u", c->fr.index[st->frames[i]] - 1);
		buf_put_u8(out, ']');
	}
	buf_puts(out, "],\n\"weights\":[");
	for (k = 0; k < c->tree.n; k++)
		buf_printf(out, k ? ",%llu" : "%llu",
			   (unsigned long long)c->ss->stacks[c->tree.order[k]].count);
	buf_puts(out, "]}]");
}

static void put_file(struct ssc_ctx *c, struct buf *out)
{
	const char *name = c->ss->title && c->ss->title[0] ? c->ss->title : "profd profile";
	uint32_t i;

	buf_puts(out, "{\"$schema\":\"" SPEEDSCOPE_SCHEMA "\",\n\"name\":");
	utf8_put_json(out, name);
	buf_puts(out,
		 ",\"exporter\":\"profd\",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[");
	for (i = 0; i < c->fr.n; i++) {
		buf_puts(out, i ? ",\n" : "\n");
		put_frame(out, &c->ss->frames[c->fr.order[i]]);
	}
	buf_puts(out, "]},\n");
	put_profile_head(c, out, name);
	put_samples(c, out);
	buf_puts(out, "}\n");
}

int render_speedscope(const struct stackset *ss, struct buf *out)
{
	struct ssc_ctx c = { .ss = ss };
	int err;

	err = render_tree_init(&c.tree, ss, RENDER_ORDER_NAMES);
	if (err)
		return err;
	err = render_frames_number(&c.fr, &c.tree);
	if (!err) {
		put_file(&c, out);
		err = out->failed ? -ENOMEM : 0;
	}
	render_frames_free(&c.fr);
	render_tree_free(&c.tree);
	return err;
}
