#include "render_json.h"

#include <errno.h>
#include <stdlib.h>

#include "framename.h"
#include "render_tree.h"
#include "utf8.h"

struct json_ctx {
	const struct stackset *ss;
	struct buf *out;
	struct render_tree tree;
	struct render_frames fr;
};

static void put_str_or_null(struct buf *out, const char *s)
{
	if (s)
		utf8_put_json(out, s);
	else
		buf_puts(out, "null");
}

static void put_metadata(struct json_ctx *c)
{
	const struct stackset *ss = c->ss;
	struct buf *out = c->out;

	buf_printf(
	    out, "{\n\"format\": \"profd-profile\",\n\"version\": %d,\n\"metadata\": {\"title\": ",
	    RENDER_JSON_VERSION);
	put_str_or_null(out, ss->title);
	buf_puts(out, ", \"type\": ");
	put_str_or_null(out, ss->type);
	buf_puts(out, ", \"unit\": ");
	put_str_or_null(out, ss->unit);
	buf_printf(out,
		   ", \"start_ns\": %llu, \"end_ns\": %llu, \"rate_hz\": %u, \"total\": ",
		   (unsigned long long)ss->start_ns, (unsigned long long)ss->end_ns, ss->rate_hz);
	if (stackset_signed(ss))
		buf_printf(out, "%lld},\n", (long long)(int64_t)c->tree.total);
	else
		buf_printf(out, "%llu},\n", (unsigned long long)c->tree.total);
}

/* Where a native frame's code is: two frames may share a name and differ
 * only in this. */
static void put_module(struct buf *out, const struct ss_module *m)
{
	buf_puts(out, ", \"binary\": ");
	utf8_put_json(out, m->path);
	if (m->build_id && m->build_id[0]) {
		buf_puts(out, ", \"build_id\": ");
		utf8_put_json(out, m->build_id);
	}
}

static void put_frame(struct buf *out, const struct stackset *ss, uint32_t id)
{
	const struct ss_frame *f = &ss->frames[id];
	const struct ss_module *m = stackset_frame_module(ss, id);
	struct framename_py py;
	struct framename_mod mod;

	buf_puts(out, "{\"name\": ");
	utf8_put_json(out, f->name);
	buf_printf(out, ", \"kind\": \"%s\"", framename_kind(f->kind));
	if (f->kind == FRAME_PYTHON && framename_python(f->name, &py)) {
		buf_puts(out, ", \"function\": ");
		utf8_put_json_n(out, py.func, py.func_len);
		buf_puts(out, ", \"file\": ");
		utf8_put_json_n(out, py.file, py.file_len);
		buf_printf(out, ", \"line\": %llu", (unsigned long long)py.line);
	} else if (f->kind == FRAME_UNKNOWN && framename_module(f->name, &mod)) {
		buf_puts(out, ", \"module\": ");
		utf8_put_json_n(out, mod.module, mod.module_len);
		buf_printf(out, ", \"offset\": %llu", (unsigned long long)mod.offset);
	}
	if (m)
		put_module(out, m);
	buf_put_u8(out, '}');
}

static void put_stacks(struct json_ctx *c)
{
	struct buf *out = c->out;
	size_t k;
	uint32_t i;

	buf_puts(out, "\"stacks\": [");
	for (k = 0; k < c->tree.n; k++) {
		const struct ss_stack *st = &c->ss->stacks[c->tree.order[k]];

		buf_puts(out, k ? ",\n  {\"frames\": [" : "\n  {\"frames\": [");
		for (i = 0; i < st->depth; i++)
			buf_printf(out, i ? ", %u" : "%u", c->fr.index[st->frames[i]] - 1);
		if (stackset_signed(c->ss)) /* the mmap profile: frees are negative */
			buf_printf(out, "], \"count\": %lld}", (long long)(int64_t)st->count);
		else
			buf_printf(out, "], \"count\": %llu}", (unsigned long long)st->count);
	}
	buf_puts(out, c->tree.n ? "\n]\n}\n" : "]\n}\n");
}

static void put_all(struct json_ctx *c)
{
	uint32_t i;

	put_metadata(c);
	buf_puts(c->out, "\"frames\": [");
	for (i = 0; i < c->fr.n; i++) {
		buf_puts(c->out, i ? ",\n  " : "\n  ");
		put_frame(c->out, c->ss, c->fr.order[i]);
	}
	buf_puts(c->out, c->fr.n ? "\n],\n" : "],\n");
	put_stacks(c);
}

int render_json(const struct stackset *ss, struct buf *out)
{
	struct json_ctx c = { .ss = ss, .out = out };
	int err;

	err = render_tree_init(&c.tree, ss, RENDER_ORDER_NAMES);
	if (err)
		return err;
	err = render_frames_number(&c.fr, &c.tree);
	if (!err) {
		put_all(&c);
		err = out->failed ? -ENOMEM : 0;
	}
	render_frames_free(&c.fr);
	render_tree_free(&c.tree);
	return err;
}
