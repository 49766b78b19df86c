#include "render_json.h"

#include <string.h>

#include "framename.h"
#include "jsonw.h"
#include "render_tree.h"

struct json_ctx {
	const struct stackset *ss;
	struct jsonw w;
	struct render_tree tree;
	struct render_frames fr;
};

/* Metadata profd does not know is null, not "": a reader can tell. */
static void key_str_or_null(struct jsonw *w, const char *key, const char *s)
{
	jsonw_key(w, key);
	if (s)
		jsonw_str(w, s);
	else
		jsonw_null(w);
}

/* The mmap profile's counts are signed (frees are negative). */
static void key_count(struct jsonw *w, const struct stackset *ss, const char *key, uint64_t v)
{
	jsonw_key(w, key);
	if (stackset_signed(ss))
		jsonw_i64(w, (int64_t)v);
	else
		jsonw_u64(w, v);
}

/* "workload": {"service": "myapp", ...} from its "key=value" lines;
 * absent when none is said. */
static void put_workload(struct jsonw *w, const char *lines)
{
	const char *line = lines, *end, *eq;
	char key[64];

	if (!lines || !lines[0])
		return;
	jsonw_key(w, "workload");
	jsonw_object(w);
	for (; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		eq = memchr(line, '=', (size_t)(end - line));
		if (!eq || (size_t)(eq - line) >= sizeof(key))
			continue;
		memcpy(key, line, (size_t)(eq - line));
		key[eq - line] = '\0';
		jsonw_key(w, key);
		jsonw_str_n(w, eq + 1, (size_t)(end - eq - 1));
	}
	jsonw_end(w);
}

static void put_metadata(struct json_ctx *c)
{
	const struct stackset *ss = c->ss;
	struct jsonw *w = &c->w;

	jsonw_key_str(w, "format", "profd-profile");
	jsonw_key_u64(w, "version", RENDER_JSON_VERSION);
	jsonw_key(w, "metadata");
	jsonw_object(w);
	key_str_or_null(w, "title", ss->title);
	key_str_or_null(w, "type", ss->type);
	key_str_or_null(w, "unit", ss->unit);
	jsonw_key_u64(w, "start_ns", ss->start_ns);
	jsonw_key_u64(w, "end_ns", ss->end_ns);
	jsonw_key_u64(w, "rate_hz", ss->rate_hz);
	key_count(w, ss, "total", c->tree.total);
	put_workload(w, ss->workload);
	jsonw_end(w);
}

/* Where a native frame's code is: two frames may share a name and differ
 * only in this. */
static void put_module(struct jsonw *w, const struct ss_module *m)
{
	jsonw_key_str(w, "binary", m->path);
	if (m->build_id && m->build_id[0])
		jsonw_key_str(w, "build_id", m->build_id);
}

/* The details parsed from the name, for readers that would rather not. */
static void put_name_details(struct jsonw *w, const struct ss_frame *f)
{
	struct framename_py py;
	struct framename_mod mod;

	if (f->kind == FRAME_PYTHON && framename_python(f->name, &py)) {
		jsonw_key(w, "function");
		jsonw_str_n(w, py.func, py.func_len);
		jsonw_key(w, "file");
		jsonw_str_n(w, py.file, py.file_len);
		jsonw_key_u64(w, "line", py.line);
	} else if (f->kind == FRAME_UNKNOWN && framename_module(f->name, &mod)) {
		jsonw_key(w, "module");
		jsonw_str_n(w, mod.module, mod.module_len);
		jsonw_key_u64(w, "offset", mod.offset);
	}
}

static void put_frame(struct jsonw *w, const struct stackset *ss, uint32_t id)
{
	const struct ss_frame *f = &ss->frames[id];
	const struct ss_module *m = stackset_frame_module(ss, id);

	jsonw_object(w);
	jsonw_key_str(w, "name", f->name);
	jsonw_key_str(w, "kind", framename_kind(f->kind));
	put_name_details(w, f);
	if (m)
		put_module(w, m);
	jsonw_end(w);
}

static void put_frames(struct json_ctx *c)
{
	uint32_t i;

	jsonw_key(&c->w, "frames");
	jsonw_array_lines(&c->w);
	for (i = 0; i < c->fr.n; i++)
		put_frame(&c->w, c->ss, c->fr.order[i]);
	jsonw_end(&c->w);
}

static void put_stacks(struct json_ctx *c)
{
	struct jsonw *w = &c->w;
	size_t k;
	uint32_t i;

	jsonw_key(w, "stacks");
	jsonw_array_lines(w);
	for (k = 0; k < c->tree.n; k++) {
		const struct ss_stack *st = &c->ss->stacks[c->tree.order[k]];

		jsonw_object(w);
		jsonw_key(w, "frames");
		jsonw_array(w);
		for (i = 0; i < st->depth; i++)
			jsonw_u64(w, c->fr.index[st->frames[i]] - 1);
		jsonw_end(w);
		key_count(w, c->ss, "count", st->count);
		jsonw_end(w);
	}
	jsonw_end(w);
}

/* A line per top-level key (at the margin), per frame and per stack:
 * the layout docs/json-format.md shows and tests/data/formats.golden.json
 * pins, so a line-oriented tool can grep one frame. */
static int put_all(struct json_ctx *c, struct buf *out)
{
	jsonw_init_style(&c->w, 1, JSONW_FLUSH);
	jsonw_object(&c->w);
	put_metadata(c);
	put_frames(c);
	put_stacks(c);
	jsonw_end(&c->w);
	return jsonw_finish(&c->w, out);
}

int render_json(const struct stackset *ss, struct buf *out)
{
	struct json_ctx c = { .ss = ss };
	int err;

	err = render_tree_init(&c.tree, ss, RENDER_ORDER_NAMES);
	if (err)
		return err;
	err = render_frames_number(&c.fr, &c.tree);
	if (!err)
		err = put_all(&c, out);
	render_frames_free(&c.fr);
	render_tree_free(&c.tree);
	return err;
}
