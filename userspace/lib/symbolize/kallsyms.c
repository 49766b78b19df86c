#include "kallsyms.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rootfs.h"
#include "hexnum.h"

/* Big kernels with many modules list ~300k lines of ~50 bytes. */
#define KALLSYMS_MAX_BYTES (256u << 20)
/* Nothing follows the last symbol to bound it (often a BPF program or
 * a module's last function): assume no function is larger than this. */
#define KALLSYMS_LAST_SPAN (64u << 10)
#define NO_NAME UINT32_MAX

/* name is an offset into names, or NO_NAME for a boundary: a data
 * symbol or an end marker, which ends the text symbol before it. */
struct ksym {
	uint64_t addr;
	uint32_t name;
	uint32_t rank;
};

struct kallsyms {
	struct ksym *syms;
	size_t n;
	size_t named; /* entries with a name (stats read it every tick) */
	char *names;
};

struct line {
	uint64_t addr;
	char type;
	const char *name;
	size_t name_len;
};

/* "ffffffff81000000 T _stext" with an optional "\t[module]" after. */
static bool parse_line(const char *p, const char *end, struct line *l)
{
	const char *name;

	if (!hexnum_parse(&p, end, &l->addr) || end - p < 3 || p[0] != ' ' || p[2] != ' ')
		return false;
	l->type = p[1];
	if (!((l->type >= 'a' && l->type <= 'z') || (l->type >= 'A' && l->type <= 'Z')))
		return false;
	name = p + 3;
	for (p = name; p < end && *p != ' ' && *p != '\t' && *p != '\r'; p++)
		if ((unsigned char)*p < 0x20)
			return false;
	l->name = name;
	l->name_len = (size_t)(p - name);
	return l->name_len > 0;
}

static bool is_end_marker(const struct line *l)
{
	return (l->name_len == 6 && !memcmp(l->name, "_etext", 6)) ||
	       (l->name_len == 10 && !memcmp(l->name, "_einittext", 10));
}

/* Lower is better among symbols at one address. */
static uint32_t type_rank(char t)
{
	switch (t) {
	case 'T': return 0;
	case 'W': return 1;
	case 't': return 2;
	case 'w': return 3;
	default: return 4;
	}
}

static const char *kname(const struct kallsyms *ks, const struct ksym *s)
{
	return s->name == NO_NAME ? NULL : ks->names + s->name;
}

static const struct kallsyms *sort_ks;

static int cmp_ksym(const void *pa, const void *pb)
{
	const struct ksym *a = pa, *b = pb;
	const char *na, *nb;
	size_t ua, ub;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	na = kname(sort_ks, a);
	nb = kname(sort_ks, b);
	if (!na || !nb)
		return !na - !nb;
	ua = strspn(na, "_");
	ub = strspn(nb, "_");
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(na, nb);
}

/* Keep one entry per address, the best-ranked (text before boundary). */
static void sort_and_fold(struct kallsyms *ks)
{
	size_t i, out = 0;

	sort_ks = ks;
	qsort(ks->syms, ks->n, sizeof(*ks->syms), cmp_ksym);
	sort_ks = NULL;
	for (i = 0; i < ks->n; i++)
		if (!out || ks->syms[out - 1].addr != ks->syms[i].addr)
			ks->syms[out++] = ks->syms[i];
	ks->n = out;
	for (i = ks->named = 0; i < ks->n; i++)
		ks->named += ks->syms[i].name != NO_NAME;
}

/* Returns whether l was a text symbol. */
static bool add_line(struct kallsyms *ks, const struct line *l, size_t *names_len)
{
	struct ksym *s = &ks->syms[ks->n++];
	bool text = strchr("tTwW", l->type) && !is_end_marker(l);

	s->addr = l->addr;
	s->rank = text ? type_rank(l->type) : 5;
	s->name = NO_NAME;
	if (!text)
		return false;
	s->name = (uint32_t)*names_len;
	memcpy(ks->names + *names_len, l->name, l->name_len);
	ks->names[*names_len + l->name_len] = '\0';
	*names_len += l->name_len + 1;
	return true;
}

static size_t count_lines(const char *text, size_t len)
{
	size_t n = 1, i;

	for (i = 0; i < len; i++)
		n += text[i] == '\n';
	return n;
}

static int fill(struct kallsyms *ks, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	size_t names_len = 0, zero = 0, ntext = 0;
	struct line l;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		bool ok;

		/* Absolute and undefined symbols are not addresses in text. */
		ok = parse_line(p, eol, &l) && !strchr("aAuUvV", l.type);
		if (ok && !l.addr)
			zero++;
		else if (ok)
			ntext += add_line(ks, &l, &names_len);
		p = nl ? nl + 1 : end;
	}
	if (!ntext)
		return zero ? -EPERM : -ENODATA;
	sort_and_fold(ks);
	return 0;
}

struct kallsyms *kallsyms_parse(const char *text, size_t len)
{
	struct kallsyms *ks;
	size_t lines = count_lines(text, len);
	int err = -ENOMEM;

	if (len >= UINT32_MAX) {
		errno = EFBIG;
		return NULL;
	}
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		goto fail;
	/* Names are copied out of text, so len + 1 bytes always suffice. */
	ks->syms = calloc(lines, sizeof(*ks->syms));
	ks->names = malloc(len + 1);
	if (!ks->syms || !ks->names)
		goto fail;
	err = fill(ks, text, len);
	if (err)
		goto fail;
	return ks;
fail:
	kallsyms_free(ks);
	errno = -err;
	return NULL;
}

struct kallsyms *kallsyms_load(const char *path)
{
	struct kallsyms *ks;
	size_t len;
	char *text;
	int err;

	err = rootfs_read_file(NULL, path ? path : KALLSYMS_DEFAULT_PATH, KALLSYMS_MAX_BYTES, &text, &len);
	if (err) {
		errno = -err;
		return NULL;
	}
	ks = kallsyms_parse(text, len);
	err = errno;
	free(text);
	errno = err;
	return ks;
}

const char *kallsyms_lookup(const struct kallsyms *ks, uint64_t addr, uint64_t *off)
{
	size_t lo = 0, hi = ks->n;
	const struct ksym *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	s = &ks->syms[lo - 1];
	if (s->name == NO_NAME || (lo == ks->n && addr - s->addr >= KALLSYMS_LAST_SPAN))
		return NULL;
	if (off)
		*off = addr - s->addr;
	return ks->names + s->name;
}

size_t kallsyms_count(const struct kallsyms *ks)
{
	return ks->named;
}

void kallsyms_free(struct kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->names);
	free(ks);
}
