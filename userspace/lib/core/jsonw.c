#include "jsonw.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

void jsonw_init_style(struct jsonw *w, unsigned lines, enum jsonw_style style)
{
	memset(w, 0, sizeof(*w));
	buf_init(&w->b);
	w->lines = lines;
	w->style = style;
}

void jsonw_init(struct jsonw *w, unsigned lines)
{
	jsonw_init_style(w, lines, JSONW_INDENTED);
}

/* A line break, indented for what sits inside `level` open containers. */
static void newline(struct jsonw *w, unsigned level)
{
	unsigned indent = 0;

	if (w->style == JSONW_INDENTED)
		indent = 2 * level;
	else if (w->style == JSONW_FLUSH && level)
		indent = 2 * (level - 1);
	buf_printf(&w->b, "\n%*s", (int)indent, "");
}

/* Before any value or key: the comma and line break its place needs.  A
 * value right after its key needs neither. */
static void item(struct jsonw *w)
{
	unsigned d = w->depth;
	bool brk = w->brk;

	w->brk = false;
	if (w->keyed) {
		w->keyed = false;
		return;
	}
	if (!d)
		return;
	if (w->has_items[d - 1])
		buf_put_u8(&w->b, ',');
	if (w->lined[d - 1] || brk)
		newline(w, d);
	else if (w->has_items[d - 1] && w->style != JSONW_COMPACT)
		buf_put_u8(&w->b, ' ');
	w->has_items[d - 1] = true;
}

static void open_container(struct jsonw *w, char open, char close, bool lined)
{
	item(w);
	if (w->depth == JSONW_MAX_DEPTH) {
		w->misused = true;
		return;
	}
	buf_put_u8(&w->b, (uint8_t)open);
	w->close[w->depth] = close;
	w->lined[w->depth] = lined || w->depth < w->lines;
	w->has_items[w->depth++] = false;
}

void jsonw_object(struct jsonw *w)
{
	open_container(w, '{', '}', false);
}

void jsonw_array(struct jsonw *w)
{
	open_container(w, '[', ']', false);
}

void jsonw_array_lines(struct jsonw *w)
{
	open_container(w, '[', ']', true);
}

void jsonw_end(struct jsonw *w)
{
	if (!w->depth || w->keyed) {
		w->misused = true;
		return;
	}
	w->depth--;
	/* A container laid out a line per item closes on a line of its own. */
	if (w->has_items[w->depth] && w->lined[w->depth])
		newline(w, w->depth);
	buf_put_u8(&w->b, (uint8_t)w->close[w->depth]);
}

void jsonw_break(struct jsonw *w)
{
	w->brk = true;
}

void jsonw_key(struct jsonw *w, const char *key)
{
	if (!w->depth || w->close[w->depth - 1] != '}' || w->keyed)
		w->misused = true;
	item(w);
	utf8_put_json(&w->b, key);
	buf_puts(&w->b, w->style == JSONW_COMPACT ? ":" : ": ");
	w->keyed = true;
}

void jsonw_str_n(struct jsonw *w, const char *s, size_t len)
{
	item(w);
	utf8_put_json_n(&w->b, s ? s : "", s ? len : 0);
}

void jsonw_str(struct jsonw *w, const char *s)
{
	jsonw_str_n(w, s, s ? strlen(s) : 0);
}

void jsonw_u64(struct jsonw *w, uint64_t v)
{
	item(w);
	buf_printf(&w->b, "%" PRIu64, v);
}

void jsonw_i64(struct jsonw *w, int64_t v)
{
	item(w);
	buf_printf(&w->b, "%" PRId64, v);
}

void jsonw_double(struct jsonw *w, double v)
{
	char s[32];

	item(w);
	if (!isfinite(v)) {
		buf_puts(&w->b, "null");
		return;
	}
	/* The shortest of 15 or 17 digits that reads back as v. */
	snprintf(s, sizeof(s), "%.15g", v);
	if (strtod(s, NULL) != v)
		snprintf(s, sizeof(s), "%.17g", v);
	buf_puts(&w->b, s);
}

void jsonw_bool(struct jsonw *w, bool v)
{
	item(w);
	buf_puts(&w->b, v ? "true" : "false");
}

void jsonw_null(struct jsonw *w)
{
	item(w);
	buf_puts(&w->b, "null");
}

void jsonw_key_str(struct jsonw *w, const char *key, const char *s)
{
	jsonw_key(w, key);
	jsonw_str(w, s);
}

void jsonw_key_u64(struct jsonw *w, const char *key, uint64_t v)
{
	jsonw_key(w, key);
	jsonw_u64(w, v);
}

void jsonw_key_bool(struct jsonw *w, const char *key, bool v)
{
	jsonw_key(w, key);
	jsonw_bool(w, v);
}

/* End the document with its newline: 0, -EPROTO or -ENOMEM. */
static int complete(struct jsonw *w)
{
	if (w->misused || w->depth || w->keyed)
		return -EPROTO;
	buf_put_u8(&w->b, '\n');
	return w->b.failed ? -ENOMEM : 0;
}

int jsonw_print(struct jsonw *w, FILE *out)
{
	int err = complete(w);

	if (!err && (fwrite(w->b.data, 1, w->b.len, out) != w->b.len || fflush(out)))
		err = errno ? -errno : -EIO;
	jsonw_free(w);
	return err;
}

int jsonw_finish(struct jsonw *w, struct buf *out)
{
	int err = complete(w);

	if (!err) {
		buf_append(out, w->b.data, w->b.len);
		err = out->failed ? -ENOMEM : 0;
	}
	jsonw_free(w);
	return err;
}

void jsonw_free(struct jsonw *w)
{
	buf_free(&w->b);
}
