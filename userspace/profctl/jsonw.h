/* jsonw: the one way profctl writes JSON.  Callers say what comes next
 * (a container, a key, a value); the writer puts the commas, the colons
 * and the layout, and escapes strings (utf8.c: quotes, backslashes,
 * control characters, invalid UTF-8 as U+FFFD), so the output is valid
 * JSON whatever bytes a process name holds.
 *
 * Layout: the items of the containers nested up to `lines` deep start a
 * line each (indented two spaces a level), deeper ones stay on their
 * item's line, so a line-oriented tool can grep one process or one
 * counter.  Allocation failure is remembered (buf.failed) and reported
 * once, by jsonw_print. */
#ifndef PROFCTL_JSONW_H
#define PROFCTL_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"

#define JSONW_MAX_DEPTH 16

struct jsonw {
	struct buf b;
	unsigned depth, lines;
	char close[JSONW_MAX_DEPTH];      /* '}' or ']' for each open container */
	bool has_items[JSONW_MAX_DEPTH];  /* a comma goes before the next item */
	bool keyed;                       /* a key was written: its value is next */
	bool misused;                     /* too deep, or an end with nothing open */
};

void jsonw_init(struct jsonw *w, unsigned lines);
void jsonw_object(struct jsonw *w);
void jsonw_array(struct jsonw *w);
/* Close the innermost open object or array. */
void jsonw_end(struct jsonw *w);
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
/* A key and its value, the usual pair. */
void jsonw_key_str(struct jsonw *w, const char *key, const char *s);
void jsonw_key_u64(struct jsonw *w, const char *key, uint64_t v);
void jsonw_key_bool(struct jsonw *w, const char *key, bool v);

/* Write the document and a newline to out and free the writer: 0, or
 * -ENOMEM (nothing written), -EPROTO when the containers do not
 * match (a bug), or -errno from the write. */
int jsonw_print(struct jsonw *w, FILE *out);
/* Free without writing. */
void jsonw_free(struct jsonw *w);

#endif
