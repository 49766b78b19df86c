#include "render_speedscope.h"

#include <string.h>

#include "framename.h"
#include "jsonw.h"
#include "render_tree.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

/* Frame ids -> speedscope indices, numbered in order of first use so
 * output does not depend on interning order and unused frames vanish. */
struct ssc_ctx {
	const struct stackset *ss;
	struct jsonw w;
	struct render_tree tree;
	struct render_frames fr;
};

static void put_frame(struct jsonw *w, const struct ss_frame *f)
{
	struct framename_py py;

	jsonw_object(w);
	jsonw_key(w, "name");
	if (f->kind == FRAME_PYTHON && framename_python(f->name, &py)) {
		jsonw_str_n(w, py.func, py.func_len);
		jsonw_key(w, "file");
		jsonw_str_n(w, py.file, py.file_len);
		jsonw_key_u64(w, "line", py.line);
	} else {
		jsonw_str(w, f->name);
	}
	jsonw_end(w);
}

static const char *value_unit(const struct stackset *ss)
{
	if (ss->unit && (!strcmp(ss->unit, "nanoseconds") || !strcmp(ss->unit, "bytes")))
		return ss->unit;
	return "none";
}

static void put_shared(struct ssc_ctx *c)
{
	struct jsonw *w = &c->w;
	uint32_t i;

	jsonw_break(w);
	jsonw_key(w, "shared");
	jsonw_object(w);
	jsonw_key(w, "frames");
	jsonw_array(w);
	for (i = 0; i < c->fr.n; i++) {
		jsonw_break(w);
		put_frame(w, &c->ss->frames[c->fr.order[i]]);
	}
	jsonw_end(w);
	jsonw_end(w);
}

static void put_samples(struct ssc_ctx *c)
{
	struct jsonw *w = &c->w;
	size_t k;
	uint32_t i;

	jsonw_break(w);
	jsonw_key(w, "samples");
	jsonw_array(w);
	for (k = 0; k < c->tree.n; k++) {
		const struct ss_stack *st = &c->ss->stacks[c->tree.order[k]];

		jsonw_break(w);
		jsonw_array(w);
		for (i = 0; i < st->depth; i++)
			jsonw_u64(w, c->fr.index[st->frames[i]] - 1);
		jsonw_end(w);
	}
	jsonw_end(w);
	jsonw_break(w);
	jsonw_key(w, "weights");
	jsonw_array(w);
	for (k = 0; k < c->tree.n; k++)
		jsonw_u64(w, c->ss->stacks[c->tree.order[k]].count);
	jsonw_end(w);
}

static void put_profile(struct ssc_ctx *c, const char *name)
{
	struct jsonw *w = &c->w;

	jsonw_break(w);
	jsonw_key(w, "profiles");
	jsonw_array(w);
	jsonw_object(w);
	jsonw_key_str(w, "type", "sampled");
	jsonw_key_str(w, "name", name);
	jsonw_key_str(w, "unit", value_unit(c->ss));
	jsonw_key_u64(w, "startValue", 0);
	jsonw_key_u64(w, "endValue", c->tree.total);
	put_samples(c);
	jsonw_end(w);
	jsonw_end(w);
}

/* Compact, with a line per frame and per sample: the layout profd has
 * always written, small yet readable in a diff. */
static int put_file(struct ssc_ctx *c, struct buf *out)
{
	const char *name = c->ss->title && c->ss->title[0] ? c->ss->title : "profd profile";
	struct jsonw *w = &c->w;

	jsonw_init_style(w, 0, JSONW_COMPACT);
	jsonw_object(w);
	jsonw_key_str(w, "$schema", SPEEDSCOPE_SCHEMA);
	jsonw_break(w);
	jsonw_key_str(w, "name", name);
	jsonw_key_str(w, "exporter", "profd");
	jsonw_key_u64(w, "activeProfileIndex", 0);
	put_shared(c);
	put_profile(c, name);
	jsonw_end(w);
	return jsonw_finish(w, out);
}

int render_speedscope(const struct stackset *ss, struct buf *out)
{
	struct ssc_ctx c = { .ss = ss };
	int err;

	err = render_tree_init(&c.tree, ss, RENDER_ORDER_NAMES);
	if (err)
		return err;
	err = render_frames_number(&c.fr, &c.tree);
	if (!err)
		err = put_file(&c, out);
	render_frames_free(&c.fr);
	render_tree_free(&c.tree);
	return err;
}
