#include "render_folded.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "render_tree.h"

/* The one place that decides how a name byte appears in folded text. */
static char folded_char(char c)
{
	if (c == ';')
		return ':';
	if ((unsigned char)c < 0x20 || c == 0x7f)
		return '?';
	return c;
}

static const char *frame_text(const struct stackset *ss, uint32_t id)
{
	const char *name = ss->frames[id].name;

	return name[0] ? name : "[unknown]";
}

/* Frame i of st as printed; a stack without frames prints "[unknown]". */
static const char *level_text(const struct stackset *ss, const struct ss_stack *st, uint32_t i)
{
	return st->depth ? frame_text(ss, st->frames[i]) : "[unknown]";
}

/* Order of two names as printed. */
static int cmp_text(const char *a, const char *b)
{
	unsigned char ca, cb;

	for (;; a++, b++) {
		if (!*a || !*b)
			return !!*a - !!*b;
		ca = (unsigned char)folded_char(*a);
		cb = (unsigned char)folded_char(*b);
		if (ca != cb)
			return ca < cb ? -1 : 1;
	}
}

/* Order of two stacks by their printed frames, level by level: 0 exactly
 * when they print as the same line.  Sorting by the raw names instead
 * (render_tree's order) left lines that print the same apart ("a\tb",
 * "a5", "a?b"), so they were not merged, and the output unsorted. */
static int cmp_printed(const void *pa, const void *pb, void *arg)
{
	const struct stackset *ss = arg;
	const struct ss_stack *a = &ss->stacks[*(const size_t *)pa];
	const struct ss_stack *b = &ss->stacks[*(const size_t *)pb];
	uint32_t da = a->depth ? a->depth : 1, db = b->depth ? b->depth : 1, i;
	int c;

	for (i = 0; i < da && i < db; i++) {
		c = cmp_text(level_text(ss, a, i), level_text(ss, b, i));
		if (c)
			return c;
	}
	return (da > db) - (da < db);
}

static void put_line(struct buf *out, const struct stackset *ss, const struct ss_stack *st,
		     uint64_t count)
{
	const char *s;
	uint32_t i;

	if (!st->depth)
		buf_puts(out, "[unknown]");
	for (i = 0; i < st->depth; i++) {
		if (i)
			buf_put_u8(out, ';');
		for (s = frame_text(ss, st->frames[i]); *s; s++)
			buf_put_u8(out, (uint8_t)folded_char(*s));
	}
	if (stackset_signed(ss)) /* the mmap profile: frees are negative */
		buf_printf(out, " %lld\n", (long long)(int64_t)count);
	else
		buf_printf(out, " %llu\n", (unsigned long long)count);
}

int render_folded(const struct stackset *ss, struct buf *out)
{
	struct render_tree t;
	uint64_t count = 0;
	size_t k;
	int err;

	err = render_tree_init(&t, ss, RENDER_ORDER_NAMES);
	if (err)
		return err;
	qsort_r(t.order, t.n, sizeof(*t.order), cmp_printed, (void *)ss);
	for (k = 0; k < t.n; k++) {
		const struct ss_stack *st = &ss->stacks[t.order[k]];

		/* Cannot overflow: render_tree_init checked the total (or
		 * the counts are signed and wrap by design). */
		count += st->count;
		if (k + 1 < t.n && !cmp_printed(&t.order[k], &t.order[k + 1], (void *)ss))
			continue;
		put_line(out, ss, st, count);
		count = 0;
	}
	render_tree_free(&t);
	return out->failed ? -ENOMEM : 0;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && !memcmp(s + len - n, suffix, n);
}

/* "qualname (path:line)": non-empty qualname and path, decimal line. */
static bool is_python_name(const char *s, size_t len)
{
	size_t open, colon, i;

	if (!ends_with(s, len, ")"))
		return false;
	for (open = len - 1; open > 0; open--)
		if (s[open] == '(' && s[open - 1] == ' ')
			break;
	if (open < 2)
		return false;
	for (colon = len - 2; colon > open; colon--)
		if (s[colon] == ':')
			break;
	if (colon <= open + 1 || colon + 1 >= len - 1)
		return false;
	for (i = colon + 1; i < len - 1; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

uint32_t folded_infer_kind(const char *name, size_t len)
{
	if (len > 4 && ends_with(name, len, "_[k]"))
		return FRAME_KERNEL;
	if (is_python_name(name, len))
		return FRAME_PYTHON;
	if (len >= 2 && name[0] == '[' && name[len - 1] == ']')
		return FRAME_UNKNOWN;
	return FRAME_NATIVE;
}

struct parser {
	struct stackset *ss;
	size_t lineno;
	uint32_t ids[FOLDED_MAX_DEPTH];
	char name[FOLDED_MAX_NAME + 1];
};

static int bad_line(const struct parser *p, const char *why)
{
	log_error("folded: line %zu: %s", p->lineno, why);
	return -EINVAL;
}

/* Quote the field when it is short and printable ("1.5", "line"): that
 * tells a float count from a missing one; never echo control bytes. */
static int bad_count(const struct parser *p, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && len <= 32; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			break;
	if (i < len || len > 32)
		return bad_line(p, "count is not a 64-bit decimal number");
	log_error("folded: line %zu: count '%.*s' is not a 64-bit decimal number", p->lineno,
		  (int)len, s);
	return -EINVAL;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static size_t trim_right(const char *s, size_t len)
{
	while (len && is_space(s[len - 1]))
		len--;
	return len;
}

/* Decimal, at most 20 digits, must fit in 64 bits. */
static bool parse_count(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!len || len > 20)
		return false;
	for (i = 0; i < len; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

/* A count, or a negative one: only the mmap profile has those (its frees),
 * so the first one makes the profile that type, in bytes. */
static int parse_signed_count(struct parser *p, const char *s, size_t len, uint64_t *out)
{
	bool neg = len > 1 && s[0] == '-';

	if (!parse_count(s + neg, len - neg, out) || (neg && *out > (uint64_t)INT64_MAX))
		return bad_count(p, s, len);
	if (!neg)
		return 0;
	*out = (uint64_t)-(int64_t)*out;
	if (!stackset_signed(p->ss) &&
	    (stackset_set_str(&p->ss->type, "mmap") || stackset_set_str(&p->ss->unit, "bytes")))
		return -ENOMEM;
	return 0;
}

static int parse_frame(struct parser *p, const char *s, size_t len, uint32_t depth)
{
	int64_t id;
	size_t i;

	if (!len)
		return bad_line(p, "empty frame name");
	if (len > FOLDED_MAX_NAME)
		return bad_line(p, "frame name too long");
	if (depth >= FOLDED_MAX_DEPTH)
		return bad_line(p, "stack too deep");
	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			return bad_line(p, "control character in frame name");
	memcpy(p->name, s, len);
	p->name[len] = '\0';
	id = stackset_intern(p->ss, folded_infer_kind(s, len), p->name);
	if (id < 0)
		return (int)id;
	p->ids[depth] = (uint32_t)id;
	return 0;
}

static int parse_stack(struct parser *p, const char *s, size_t len, uint32_t *depth)
{
	const char *end = s + len, *semi;
	int err;

	for (*depth = 0;; (*depth)++) {
		semi = memchr(s, ';', (size_t)(end - s));
		err = parse_frame(p, s, semi ? (size_t)(semi - s) : (size_t)(end - s), *depth);
		if (err)
			return err;
		if (!semi)
			break;
		s = semi + 1;
	}
	(*depth)++;
	return 0;
}

static int parse_line(struct parser *p, const char *s, size_t len)
{
	uint64_t count;
	uint32_t depth;
	size_t sep;
	int err;

	if (len > FOLDED_MAX_LINE)
		return bad_line(p, "line too long");
	len = trim_right(s, len);
	if (!len)
		return 0;
	for (sep = len; sep > 0 && s[sep - 1] != ' ' && s[sep - 1] != '\t'; sep--)
		;
	if (!sep)
		return bad_line(p, "missing count");
	err = parse_signed_count(p, s + sep, len - sep, &count);
	if (err)
		return err;
	if (count > UINT64_MAX - p->ss->total && !stackset_signed(p->ss))
		return bad_line(p, "count overflows the total");
	len = trim_right(s, sep);
	if (!len)
		return bad_line(p, "no frames before the count");
	err = parse_stack(p, s, len, &depth);
	if (err || !count)
		return err;
	return stackset_add(p->ss, p->ids, depth, count);
}

int folded_parse(const char *text, size_t len, struct stackset *ss)
{
	struct parser *p;
	size_t pos = 0;
	int err = 0;

	if (len && (!text || memchr(text, '\0', len))) {
		log_error("folded: NUL byte in input");
		return -EINVAL;
	}
	/* The scratch arrays are too big for the stack of a library call. */
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->ss = ss;
	while (pos < len && !err) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;

		p->lineno++;
		err = parse_line(p, text + pos, end - pos);
		pos = end + 1;
	}
	free(p);
	return err;
}
