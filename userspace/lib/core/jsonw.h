/* jsonw: the one way profd writes JSON (profctl's answers, the JSON and
 * speedscope profiles).  Callers say what comes next (a container, a key,
 * a value); the writer puts the commas, the colons and the layout, and
 * escapes strings (utf8.c: quotes, backslashes, control characters,
 * invalid UTF-8 as U+FFFD), so the output is valid JSON whatever bytes a
 * process name holds.
 *
 * Layout: the items of the containers nested up to `lines` deep start a
 * line each (indented two spaces a level), deeper ones stay on their
 * item's line, so a line-oriented tool can grep one process or one
 * counter.  jsonw_array_lines and jsonw_break ask for lines deeper down,
 * and a style other than JSONW_INDENTED keeps the layout of a file
 * format that was pinned before this writer existed.  Allocation failure
 * is remembered (buf.failed) and reported once, by jsonw_print or
 * jsonw_finish. */
#ifndef PROFD_JSONW_H
#define PROFD_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"

#define JSONW_MAX_DEPTH 16

enum jsonw_style {
	JSONW_INDENTED, /* ", " and ": ", lines indented two spaces a level */
	JSONW_FLUSH,    /* the same, the top container's lines not indented
			 * (the profd-profile format, docs/json-format.md) */
	JSONW_COMPACT,  /* "," and ":", lines not indented (speedscope) */
};

struct jsonw {
	struct buf b;
	unsigned depth, lines;
	enum jsonw_style style;
	char close[JSONW_MAX_DEPTH];      /* '}' or ']' for each open container */
	bool has_items[JSONW_MAX_DEPTH];  /* a comma goes before the next item */
	bool lined[JSONW_MAX_DEPTH];      /* its items start a line each */
	bool keyed;                       /* a key was written: its value is next */
	bool brk;                         /* jsonw_break: the next item starts a line */
	bool misused;                     /* too deep, or an end with nothing open */
};

void jsonw_init(struct jsonw *w, unsigned lines);
void jsonw_init_style(struct jsonw *w, unsigned lines, enum jsonw_style style);
void jsonw_object(struct jsonw *w);
void jsonw_array(struct jsonw *w);
/* An array whose items start a line each however deep it is. */
void jsonw_array_lines(struct jsonw *w);
/* Close the innermost open object or array. */
void jsonw_end(struct jsonw *w);
/* Start the next item (a key or an array's value) on a line of its own. */
void jsonw_break(struct jsonw *w);
void jsonw_key(struct jsonw *w, const char *key);
/* A string value; NULL is written as "" (a name profd does not know). */
void jsonw_str(struct jsonw *w, const char *s);
/* The first len bytes of s, which need not end in NUL. */
void jsonw_str_n(struct jsonw *w, const char *s, size_t len);
void jsonw_u64(struct jsonw *w, uint64_t v);
void jsonw_i64(struct jsonw *w, int64_t v);
/* NaN and infinities, which JSON cannot spell, as null. */
void jsonw_double(struct jsonw *w, double v);
void jsonw_bool(struct jsonw *w, bool v);
void jsonw_null(struct jsonw *w);
/* A key and its value, the usual pair. */
void jsonw_key_str(struct jsonw *w, const char *key, const char *s);
void jsonw_key_u64(struct jsonw *w, const char *key, uint64_t v);
void jsonw_key_bool(struct jsonw *w, const char *key, bool v);

/* Write the document and a newline to out and free the writer: 0, or
 * -ENOMEM (nothing written), -EPROTO when the containers do not
 * match (a bug), or -errno from the write. */
int jsonw_print(struct jsonw *w, FILE *out);
/* The same, appended to out (a renderer's buffer): 0, or -ENOMEM or
 * -EPROTO with nothing appended. */
int jsonw_finish(struct jsonw *w, struct buf *out);
/* Free without writing. */
void jsonw_free(struct jsonw *w);

#endif
