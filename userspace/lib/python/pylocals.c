#include "pylocals.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pydict.h"
#include "pymem.h"

#define TYPE_NAME_MAX 48 /* bytes of tp_name kept */
#define PAGE 4096u
#define SIZE_SANE (1ll << 40) /* an ob_size above this is a lie */
#define CO_VARARGS 0x4
#define CO_VARKEYWORDS 0x8
/* localspluskinds (3.11+, pycore_code.h) */
#define CO_FAST_HIDDEN 0x10 /* 3.12+: an inlined comprehension's */
#define CO_FAST_CELL 0x40
#define CO_FAST_FREE 0x80
#define STACKREF_INT_TAG 3 /* 3.14+: a _PyStackRef holding an int, not an object */

/* A bounded output string: text that does not fit is cut at a whole
 * character and ends in "...". */
struct out {
	char *p;
	size_t len, cap; /* cap: the buffer's size */
	bool cut;
};

static void out_init(struct out *o, char *buf, size_t cap)
{
	o->p = buf;
	o->len = 0;
	o->cap = cap;
	o->cut = false;
	buf[0] = '\0';
}

/* One character's bytes (or a token): all or nothing, room left for
 * "..." and the NUL. */
static void put(struct out *o, const char *s, size_t n)
{
	if (o->cut || o->len + n + 4 > o->cap) {
		o->cut = true;
		return;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void out_end(struct out *o)
{
	if (o->cut && o->len + 4 <= o->cap) {
		memcpy(o->p + o->len, "...", 4);
		o->len += 3;
	}
}

static void unreadable(struct out *o)
{
	puts_(o, "<unreadable>");
}

/* ---- reading ---- */

static uint64_t head_size(const struct pyruntime *rt)
{
	return (uint64_t)rt->off.object_type + 8; /* PyObject: ob_type last */
}

static bool aligned(uint64_t obj)
{
	return obj && !(obj & 7);
}

/* A C string of at most len - 1 bytes, read a page at a time so that a
 * short name at the end of a mapping is still read; characters outside
 * printable ASCII become '?' (a name goes on a tab-separated line). */
static int read_cstr(int pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0, i;

	while (got + 1 < len) {
		size_t n = PAGE - (size_t)((addr + got) % PAGE);
		char *nul;

		if (n > len - 1 - got)
			n = len - 1 - got;
		if (pymem_read(pid, addr + got, buf + got, n))
			return -EFAULT;
		nul = memchr(buf + got, '\0', n);
		got += nul ? (size_t)(nul - (buf + got)) : n;
		if (nul)
			break;
	}
	buf[got] = '\0';
	for (i = 0; i < got; i++)
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			buf[i] = '?';
	return got ? 0 : -EINVAL;
}

static int type_name(const struct pyruntime *rt, uint64_t obj, char *buf, size_t len)
{
	uint64_t type, name;

	if (pymem_read_u64(rt->pid, obj + rt->off.object_type, &type) || !aligned(type) ||
	    pymem_read_u64(rt->pid, type + rt->off.type_name, &name))
		return -EFAULT;
	return read_cstr(rt->pid, name, buf, len);
}

/* An ob_size (at addr), believed only if sane. */
static int var_size(const struct pyruntime *rt, uint64_t addr, int64_t *n)
{
	if (pymem_read(rt->pid, addr, n, 8) || *n < 0 || *n > SIZE_SANE)
		return -EFAULT;
	return 0;
}

/* ---- int, bool, float ---- */

/* Decimal text of digits (30-bit, least significant first) into o. */
static void put_digits(struct out *o, const uint32_t *d, size_t n, bool neg)
{
	uint32_t limb[PYLOCALS_INT_DIGITS * 30 / 29 + 2]; /* base 10^9 */
	size_t nl = 0, i, j;
	char text[16];

	for (i = n; i > 0; i--) {
		uint64_t carry = d[i - 1];

		for (j = 0; j < nl; j++) {
			uint64_t t = ((uint64_t)limb[j] << 30) + carry;

			limb[j] = (uint32_t)(t % 1000000000u);
			carry = t / 1000000000u;
		}
		while (carry) {
			limb[nl++] = (uint32_t)(carry % 1000000000u);
			carry /= 1000000000u;
		}
	}
	if (neg && nl)
		put(o, "-", 1);
	snprintf(text, sizeof(text), "%" PRIu32, nl ? limb[nl - 1] : 0);
	puts_(o, text);
	for (i = nl > 1 ? nl - 1 : 0; i > 0; i--) {
		snprintf(text, sizeof(text), "%09" PRIu32, limb[i - 1]);
		puts_(o, text);
	}
}

/* An int's sign and digit count: from lv_tag (3.12+: digits << 3 | sign,
 * 0 positive, 1 zero, 2 negative) or the signed ob_size before. */
static int long_shape(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t obj,
		      uint64_t *ndigits, bool *neg)
{
	int64_t v;

	if (pymem_read(rt->pid, obj + lo->long_size, &v, 8))
		return -EFAULT;
	if (lo->long_tagged) {
		if ((v & 3) == 3)
			return -EINVAL;
		*ndigits = (uint64_t)v >> 3;
		*neg = (v & 3) == 2;
	} else {
		*neg = v < 0;
		*ndigits = v < 0 ? -(uint64_t)v : (uint64_t)v;
	}
	return *ndigits > (uint64_t)SIZE_SANE ? -EINVAL : 0;
}

static void repr_long(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t obj,
		      struct out *o)
{
	uint32_t d[PYLOCALS_INT_DIGITS];
	uint64_t n, i;
	bool neg;
	char text[96];

	if (long_shape(rt, lo, obj, &n, &neg)) {
		unreadable(o);
		return;
	}
	if (n > PYLOCALS_INT_DIGITS) {
		snprintf(text, sizeof(text), "<int of about %" PRIu64 " digits at %#" PRIx64 ">",
			 n * 30 * 301 / 1000, obj);
		puts_(o, text);
		return;
	}
	if (n && pymem_read(rt->pid, obj + lo->long_digits, d, n * 4)) {
		unreadable(o);
		return;
	}
	for (i = 0; i < n; i++)
		if (d[i] >> 30) { /* not a digit: the memory lies */
			unreadable(o);
			return;
		}
	put_digits(o, d, (size_t)n, neg);
}

static void repr_bool(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t obj,
		      struct out *o)
{
	uint64_t n;
	bool neg;

	if (long_shape(rt, lo, obj, &n, &neg) || n > 1)
		unreadable(o);
	else
		puts_(o, n ? "True" : "False");
}

/* The shortest text that reads back as the same double, as repr does. */
static void repr_float(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t obj,
		       struct out *o)
{
	char text[40];
	double v;
	int prec;

	if (pymem_read(rt->pid, obj + lo->float_value, &v, sizeof(v))) {
		unreadable(o);
		return;
	}
	if (isnan(v) || isinf(v)) {
		puts_(o, isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(text, sizeof(text), "%.*g", prec, v);
		if (strtod(text, NULL) == v)
			break;
	}
	puts_(o, text);
	if (!strpbrk(text, ".e"))
		puts_(o, ".0");
}

/* ---- str, bytes ---- */

static void put_utf8(struct out *o, uint32_t cp)
{
	char b[4];

	if (cp < 0x80) {
		b[0] = (char)cp;
		put(o, b, 1);
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		put(o, b, 2);
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		put(o, b, 3);
	} else {
		b[0] = (char)(0xf0 | cp >> 18);
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		put(o, b, 4);
	}
}

/* One character as repr writes it inside quote q: escapes for the quote,
 * the backslash and what does not print; other non-ASCII as UTF-8. */
static void put_escaped(struct out *o, uint32_t cp, char q)
{
	char text[12];

	if ((q && cp == (uint32_t)q) || cp == '\\') {
		text[0] = '\\';
		text[1] = (char)cp;
		put(o, text, 2);
	} else if (cp == '\n' || cp == '\r' || cp == '\t') {
		put(o, cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : "\\t", 2);
	} else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
		snprintf(text, sizeof(text), "\\x%02x", cp);
		puts_(o, text);
	} else if ((cp >= 0xd800 && cp <= 0xdfff) || cp == 0x2028 || cp == 0x2029 ||
		   cp > 0x10ffff) {
		snprintf(text, sizeof(text), cp > 0xffff ? "\\U%08x" : "\\u%04x", cp);
		puts_(o, text);
	} else {
		put_utf8(o, cp);
	}
}

struct str_shape {
	uint64_t length, data;
	unsigned int kind; /* bytes per character: 1, 2, 4 */
};

/* Where a str's characters are and how wide (PyASCIIObject.state). */
static int str_shape(const struct pyruntime *rt, uint64_t obj, struct str_shape *s)
{
	const struct profd_pyoffsets *off = &rt->off;
	uint8_t head[128];
	uint32_t state;

	if (off->unicode_compact_data + 8 > sizeof(head) || off->unicode_state + 4 > sizeof(head) ||
	    off->unicode_length + 8 > sizeof(head) ||
	    pymem_read(rt->pid, obj, head, off->unicode_compact_data + 8))
		return -EFAULT;
	memcpy(&s->length, head + off->unicode_length, 8);
	memcpy(&state, head + off->unicode_state, 4);
	if (off->free_threaded && off->version >= 0x030e)
		state >>= PYOFF_UNICODE_FT_SHIFT; /* interned takes a byte there */
	s->kind = (state >> PYOFF_UNICODE_KIND_SHIFT) & PYOFF_UNICODE_KIND_MASK;
	if ((s->kind != 1 && s->kind != 2 && s->kind != 4) || s->length > (uint64_t)SIZE_SANE ||
	    (off->unicode_has_ready_bit && !(state & PYOFF_UNICODE_READY)))
		return -EINVAL;
	if (!(state & PYOFF_UNICODE_COMPACT)) /* legacy: data.any follows */
		memcpy(&s->data, head + off->unicode_compact_data, 8);
	else if (state & PYOFF_UNICODE_ASCII)
		s->data = obj + off->unicode_ascii_data;
	else
		s->data = obj + off->unicode_compact_data;
	return 0;
}

/* A str's first max characters, quoted (q) and escaped, or bare (q 0:
 * a name).  0 or -errno; nothing written then. */
/* The i-th character of data, kind bytes wide. */
static uint32_t char_at(const uint8_t *data, unsigned int kind, size_t i)
{
	uint32_t cp;
	uint16_t u;

	if (kind == 1)
		return data[i];
	if (kind == 2) {
		memcpy(&u, data + 2 * i, 2);
		return u;
	}
	memcpy(&cp, data + 4 * i, 4);
	return cp;
}

/* The quote repr picks: ' unless the text has ' and no " (of what was
 * read: a cut text may choose otherwise than Python would). */
static char pick_quote(const uint8_t *data, unsigned int kind, size_t n)
{
	bool single = false, dbl = false;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t cp = char_at(data, kind, i);

		single |= cp == '\'';
		dbl |= cp == '"';
	}
	return single && !dbl ? '"' : '\'';
}

static int put_str(const struct pyruntime *rt, uint64_t obj, size_t max, bool quoted, struct out *o)
{
	uint8_t data[PYLOCALS_STR_CHARS * 4];
	struct str_shape s;
	size_t n, i;
	char q;

	if (max > PYLOCALS_STR_CHARS)
		max = PYLOCALS_STR_CHARS;
	if (str_shape(rt, obj, &s))
		return -EFAULT;
	n = s.length < max ? (size_t)s.length : max;
	if (n && pymem_read(rt->pid, s.data, data, n * s.kind))
		return -EFAULT;
	q = quoted ? pick_quote(data, s.kind, n) : 0;
	if (q)
		put(o, &q, 1);
	for (i = 0; i < n; i++)
		put_escaped(o, char_at(data, s.kind, i), q);
	if (s.length > n)
		o->cut = true;
	else if (q)
		put(o, &q, 1);
	return 0;
}

static void repr_bytes(const struct pyruntime *rt, uint64_t obj, struct out *o)
{
	uint8_t data[PYLOCALS_STR_CHARS];
	int64_t len;
	size_t n, i;
	char text[8], q;

	if (pymem_read(rt->pid, obj + rt->off.bytes_size, &len, 8) || len < 0 || len > SIZE_SANE) {
		unreadable(o);
		return;
	}
	n = (uint64_t)len < sizeof(data) ? (size_t)len : sizeof(data);
	if (n && pymem_read(rt->pid, obj + rt->off.bytes_data, data, n)) {
		unreadable(o);
		return;
	}
	q = pick_quote(data, 1, n);
	put(o, "b", 1);
	put(o, &q, 1);
	for (i = 0; i < n; i++) {
		if (data[i] >= 0x80) {
			snprintf(text, sizeof(text), "\\x%02x", data[i]);
			puts_(o, text);
		} else {
			put_escaped(o, data[i], q);
		}
	}
	if ((uint64_t)len > n)
		o->cut = true;
	else
		put(o, &q, 1);
}

/* ---- containers and the rest ---- */

static void repr_obj(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t obj,
		     int depth, struct out *o);

static void put_at(struct out *o, const char *type, uint64_t obj)
{
	char text[TYPE_NAME_MAX + 32];

	snprintf(text, sizeof(text), "<%s at %#" PRIx64 ">", type, obj);
	puts_(o, text);
}

/* A list's or tuple's first items: items, the address of its item
 * pointers (inline in a tuple, ob_item's target in a list). */
static void repr_seq(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t obj,
		     bool tuple, int depth, struct out *o)
{
	uint64_t items, v[PYLOCALS_ITEMS];
	int64_t n;
	size_t i, k;

	items = obj + (tuple ? lo->tuple_items : lo->list_items); /* a list's: a pointer */
	if (var_size(rt, obj + (tuple ? lo->tuple_size : lo->list_size), &n) ||
	    (!tuple && pymem_read_u64(rt->pid, items, &items))) {
		unreadable(o);
		return;
	}
	k = n < PYLOCALS_ITEMS ? (size_t)n : PYLOCALS_ITEMS;
	if (k && pymem_read(rt->pid, items, v, k * 8)) {
		unreadable(o);
		return;
	}
	put(o, tuple ? "(" : "[", 1);
	for (i = 0; i < k; i++) {
		if (i)
			put(o, ", ", 2);
		repr_obj(rt, lo, v[i], depth + 1, o);
	}
	if ((size_t)n > k)
		puts_(o, ", ...");
	else if (tuple && n == 1)
		put(o, ",", 1);
	put(o, tuple ? ")" : "]", 1);
}

/* Entries of a dict looked at for its first PYLOCALS_ITEMS items
 * (deleted ones are empty entries). */
#define DK_ENTRIES_READ 16

/* A dict's first items, key then value, into kv: how many, or -1 where
 * the dict cannot be read sanely (pydict.c: either layout of the keys,
 * combined or split). */
static int dict_items(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t obj,
		      uint64_t kv[][2])
{
	struct pydict_layout lay;
	struct pydict_view k;
	size_t i;
	int n = 0;

	if (pydict_layout_of(rt, lo, &lay) || pydict_view(rt, &lay, obj, DK_ENTRIES_READ, &k))
		return -1;
	for (i = 0; i < k.n && n < PYLOCALS_ITEMS; i++) {
		if (pydict_entry(rt->pid, &k, i, &kv[n][0], &kv[n][1]))
			return -1;
		n += kv[n][0] && kv[n][1];
	}
	return n;
}

/* Its first items as {key: value}, or <dict at 0xADDR> where it cannot
 * be read. */
static void repr_dict(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t obj,
		      int depth, struct out *o)
{
	uint64_t kv[PYLOCALS_ITEMS][2];
	int64_t used;
	int i, n = dict_items(rt, lo, obj, kv);

	if (n < 0 || var_size(rt, obj + lo->dict_used, &used)) {
		put_at(o, "dict", obj);
		return;
	}
	put(o, "{", 1);
	for (i = 0; i < n; i++) {
		if (i)
			put(o, ", ", 2);
		repr_obj(rt, lo, kv[i][0], depth + 1, o);
		put(o, ": ", 2);
		repr_obj(rt, lo, kv[i][1], depth + 1, o);
	}
	if (n < used)
		puts_(o, n ? ", ..." : "...");
	put(o, "}", 1);
}

static void repr_obj(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t obj,
		     int depth, struct out *o)
{
	char type[TYPE_NAME_MAX];
	bool seq;

	if (o->cut) /* full: nothing more is shown, so nothing more is read */
		return;
	if (!aligned(obj) || type_name(rt, obj, type, sizeof(type))) {
		unreadable(o);
		return;
	}
	seq = !strcmp(type, "list") || !strcmp(type, "tuple");
	if ((seq || !strcmp(type, "dict")) && depth > PYLOCALS_DEPTH)
		puts_(o, type[0] == 'l' ? "[...]" : type[0] == 't' ? "(...)" : "{...}");
	else if (!strcmp(type, "int"))
		repr_long(rt, lo, obj, o);
	else if (!strcmp(type, "bool"))
		repr_bool(rt, lo, obj, o);
	else if (!strcmp(type, "NoneType"))
		puts_(o, "None");
	else if (!strcmp(type, "float"))
		repr_float(rt, lo, obj, o);
	else if (!strcmp(type, "str")) {
		if (put_str(rt, obj, PYLOCALS_STR_CHARS, true, o))
			unreadable(o);
	} else if (!strcmp(type, "bytes"))
		repr_bytes(rt, obj, o);
	else if (seq)
		repr_seq(rt, lo, obj, type[0] == 't', depth, o);
	else if (!strcmp(type, "dict"))
		repr_dict(rt, lo, obj, depth, o);
	else
		put_at(o, type, obj);
}

void pylocals_repr(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t obj,
		   char *buf, size_t len)
{
	struct out o;

	out_init(&o, buf, len);
	repr_obj(rt, lo, obj, 0, &o);
	out_end(&o);
}

int pylocals_str(const struct pyruntime *rt, uint64_t obj, char *buf, size_t len)
{
	char type[8];
	struct out o;

	out_init(&o, buf, len);
	if (!aligned(obj) || type_name(rt, obj, type, sizeof(type)) || strcmp(type, "str") ||
	    put_str(rt, obj, PYLOCALS_STR_CHARS, false, &o))
		return -EFAULT;
	out_end(&o);
	return 0;
}

/* ---- a frame's variables ---- */

struct frame_vars {
	size_t n, nargs;
	uint64_t names[PYLOCALS_SLOTS_MAX];
	uint64_t values[PYLOCALS_SLOTS_MAX];
	char scope[PYLOCALS_SLOTS_MAX];
	bool arg[PYLOCALS_SLOTS_MAX];
	bool hidden[PYLOCALS_SLOTS_MAX];
};

static int read_int(int pid, uint64_t addr, uint32_t off, int32_t *v)
{
	if (off == PYOFF_NONE || pymem_read(pid, addr + off, v, 4))
		return -EFAULT;
	return *v < 0 || *v > PYLOCALS_SLOTS_MAX * 4 ? -EINVAL : 0;
}

/* Append the names of the tuple at code + off, each with scope. */
static int add_names(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t code,
		     uint32_t off, char scope, struct frame_vars *fv)
{
	uint64_t tuple;
	int64_t n;
	size_t i, k;

	if (pymem_read_u64(rt->pid, code + off, &tuple) || !aligned(tuple) ||
	    var_size(rt, tuple + lo->tuple_size, &n))
		return -EFAULT;
	k = (size_t)n < PYLOCALS_SLOTS_MAX - fv->n ? (size_t)n : PYLOCALS_SLOTS_MAX - fv->n;
	if (k && pymem_read(rt->pid, tuple + lo->tuple_items, fv->names + fv->n, k * 8))
		return -EFAULT;
	for (i = fv->n; i < fv->n + k; i++)
		fv->scope[i] = scope;
	fv->n += k;
	return 0;
}

/* 3.9, 3.10: co_varnames (the first co_nlocals slots), then cells and
 * free variables; a cell that took over an argument (co_cell2arg) is
 * that argument. */
static int names_old(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t code,
		     struct frame_vars *fv)
{
	int64_t c2a[PYLOCALS_SLOTS_MAX];
	uint64_t cell2arg;
	int32_t nlocals;
	size_t first_cell, i;

	if (read_int(rt->pid, code, lo->code_nlocals, &nlocals) ||
	    add_names(rt, lo, code, lo->code_varnames, PYLOCAL_LOCAL, fv) ||
	    fv->n != (size_t)nlocals)
		return -EINVAL;
	first_cell = fv->n;
	if (add_names(rt, lo, code, lo->code_cellvars, PYLOCAL_CELL, fv) ||
	    add_names(rt, lo, code, lo->code_freevars, PYLOCAL_FREE, fv))
		return -EFAULT;
	for (i = 0; i < fv->n; i++)
		fv->arg[i] = i < fv->nargs;
	if (pymem_read_u64(rt->pid, code + lo->code_cell2arg, &cell2arg) || !cell2arg)
		return 0;
	for (i = first_cell; i < fv->n && fv->scope[i] == PYLOCAL_CELL; i++)
		if (!pymem_read(rt->pid, cell2arg + 8 * (i - first_cell), &c2a[i], 8))
			fv->arg[i] = c2a[i] >= 0 && (uint64_t)c2a[i] < fv->nargs;
	return 0;
}

/* 3.11+: co_localsplusnames with a kind byte each. */
static int names_new(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t code,
		     struct frame_vars *fv)
{
	uint8_t kinds[PYLOCALS_SLOTS_MAX];
	uint64_t bytes;
	int64_t len;
	size_t i;

	if (add_names(rt, lo, code, lo->code_localsplusnames, PYLOCAL_LOCAL, fv) ||
	    pymem_read_u64(rt->pid, code + lo->code_localspluskinds, &bytes) || !aligned(bytes) ||
	    pymem_read(rt->pid, bytes + rt->off.bytes_size, &len, 8))
		return -EFAULT;
	if (len < (int64_t)fv->n ||
	    (fv->n && pymem_read(rt->pid, bytes + rt->off.bytes_data, kinds, fv->n)))
		return -EINVAL;
	for (i = 0; i < fv->n; i++) {
		fv->scope[i] = kinds[i] & CO_FAST_FREE	 ? PYLOCAL_FREE
			       : kinds[i] & CO_FAST_CELL ? PYLOCAL_CELL
							 : PYLOCAL_LOCAL;
		fv->hidden[i] = kinds[i] & CO_FAST_HIDDEN;
		fv->arg[i] = i < fv->nargs;
	}
	return 0;
}

/* How many of the first slots are arguments: positional (with
 * positional-only), keyword-only, *args, **kwargs. */
static int count_args(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t code,
		      size_t *nargs)
{
	int32_t argc, kwonly, flags;

	if (read_int(rt->pid, code, lo->code_argcount, &argc) ||
	    read_int(rt->pid, code, lo->code_kwonlyargcount, &kwonly) ||
	    pymem_read(rt->pid, code + lo->code_flags, &flags, 4))
		return -EFAULT;
	*nargs =
	    (size_t)argc + (size_t)kwonly + !!(flags & CO_VARARGS) + !!(flags & CO_VARKEYWORDS);
	return 0;
}

/* A slot's object: a _PyStackRef's tag bits off (3.14+; a tagged int is
 * not an object, NULL's bits are a tag), a cell's content. */
static uint64_t slot_object(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t v,
			    char scope, bool *tagged_int)
{
	char type[8];
	uint64_t ref;

	*tagged_int = lo->stackref && (v & 3) == STACKREF_INT_TAG;
	if (lo->stackref && !*tagged_int)
		v &= ~PYOFF_STACKREF_TAG;
	if (!v || *tagged_int || scope == PYLOCAL_LOCAL)
		return v;
	/* Before MAKE_CELL runs (3.11+) the slot holds the value itself. */
	if (type_name(rt, v, type, sizeof(type)) || strcmp(type, "cell"))
		return v;
	if (pymem_read_u64(rt->pid, v + head_size(rt), &ref))
		return v;
	return ref;
}

static int emit(const struct pyruntime *rt, const struct pyoff_locals *lo,
		const struct frame_vars *fv, size_t i, struct pylocal *l)
{
	struct out o;
	bool tagged_int;
	uint64_t obj = slot_object(rt, lo, fv->values[i], fv->scope[i], &tagged_int);

	if (!obj)
		return 1; /* unbound */
	l->arg = fv->arg[i];
	l->scope = fv->scope[i];
	out_init(&o, l->name, sizeof(l->name));
	if (!aligned(fv->names[i]) || put_str(rt, fv->names[i], PYLOCALS_NAME_MAX, false, &o))
		snprintf(l->name, sizeof(l->name), "<slot %zu>", i);
	out_end(&o);
	if (tagged_int)
		snprintf(l->repr, sizeof(l->repr), "%" PRId64, (int64_t)obj >> 2);
	else
		pylocals_repr(rt, lo, obj, l->repr, sizeof(l->repr));
	return 0;
}

/* Arguments, then the rest; what fn returns. */
static int emit_all(const struct pyruntime *rt, const struct pyoff_locals *lo,
		    const struct frame_vars *fv, pylocals_fn fn, void *arg)
{
	struct pylocal l;
	size_t i, shown = 0;
	int pass, err;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < fv->n && shown < PYLOCALS_MAX; i++) {
			if (fv->arg[i] != (pass == 0) || fv->hidden[i] || emit(rt, lo, fv, i, &l))
				continue;
			shown++;
			err = fn(&l, arg);
			if (err)
				return err;
		}
	}
	return 0;
}

int pylocals_frame_at(const struct pyruntime *rt, const struct pyoff_locals *lo, uint64_t code,
		      uint64_t frame, pylocals_fn fn, void *arg)
{
	struct frame_vars *fv = calloc(1, sizeof(*fv));
	int err;

	if (!fv)
		return -ENOMEM;
	err = count_args(rt, lo, code, &fv->nargs);
	if (!err)
		err = lo->code_localsplusnames == PYOFF_NONE ? names_old(rt, lo, code, fv)
							     : names_new(rt, lo, code, fv);
	if (!err && fv->n &&
	    pymem_read(rt->pid, frame + lo->frame_localsplus, fv->values, fv->n * 8))
		err = -EFAULT;
	if (!err)
		err = emit_all(rt, lo, fv, fn, arg);
	free(fv);
	return err;
}

int pylocals_layout(const struct pyruntime *rt, struct pyoff_locals *out)
{
	uint8_t head[PYOFF_DEBUG_READ_SIZE];

	if (rt->major != 3)
		return -EPROTONOSUPPORT;
	if (rt->minor >= 13 && pymem_read(rt->pid, rt->runtime_addr, head, sizeof(head)))
		return -EFAULT;
	return pyoffsets_locals(rt->minor, head, sizeof(head), out);
}

int pylocals_frame(const struct pyruntime *rt, uint64_t code, uint64_t frame, pylocals_fn fn,
		   void *arg)
{
	struct pyoff_locals lo;
	int err = pylocals_layout(rt, &lo);

	return err ? err : pylocals_frame_at(rt, &lo, code, frame, fn, arg);
}
