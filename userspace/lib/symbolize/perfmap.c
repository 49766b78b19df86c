#include "perfmap.h"
#include "hexnum.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* How far back a lookup walks past nested or stale shorter entries. */
#define ENCLOSING_SCAN 8

struct pm_entry {
	uint64_t start, end;
	size_t seq; /* line order: later wins */
	const char *name;
};

struct perfmap {
	struct pm_entry *v;
	size_t n;
	char *names;
};

bool perfmap_owner_ok(uid_t file_uid, uid_t proc_uid)
{
	return file_uid == 0 || (proc_uid != (uid_t)-1 && file_uid == proc_uid);
}

/* perf maps write addresses with or without "0x". */
static bool perfmap_hex(const char **p, const char *end, uint64_t *v)
{
	if (end - *p > 2 && (*p)[0] == '0' && ((*p)[1] == 'x' || (*p)[1] == 'X'))
		*p += 2;
	return hexnum_parse(p, end, v);
}

static bool parse_line(const char *p, const char *end, struct pm_entry *e, size_t *name_len)
{
	uint64_t size;

	if (!perfmap_hex(&p, end, &e->start) || p >= end || *p != ' ')
		return false;
	p++;
	if (!perfmap_hex(&p, end, &size) || p >= end || *p != ' ')
		return false;
	p++;
	if (end > p && end[-1] == '\r')
		end--;
	if (!size || e->start + size < e->start || p >= end)
		return false;
	e->end = e->start + size;
	e->name = p;
	*name_len = (size_t)(end - p);
	return true;
}

static int cmp_entry(const void *pa, const void *pb)
{
	const struct pm_entry *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->seq < b->seq) - (a->seq > b->seq); /* newest first */
}

static void sort_and_fold(struct perfmap *pm)
{
	size_t i, out = 0;

	qsort(pm->v, pm->n, sizeof(*pm->v), cmp_entry);
	for (i = 0; i < pm->n; i++)
		if (!out || pm->v[out - 1].start != pm->v[i].start)
			pm->v[out++] = pm->v[i];
	pm->n = out;
}

static size_t count_lines(const char *text, size_t len)
{
	size_t n = 1, i;

	for (i = 0; i < len; i++)
		n += text[i] == '\n';
	return n;
}

struct perfmap *perfmap_parse(const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	struct perfmap *pm = calloc(1, sizeof(*pm));
	size_t used = 0;

	if (!pm)
		return NULL;
	pm->v = calloc(count_lines(text, len), sizeof(*pm->v));
	pm->names = malloc(len + 1);
	if (!pm->v || !pm->names) {
		perfmap_free(pm);
		errno = ENOMEM;
		return NULL;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct pm_entry *e = &pm->v[pm->n];
		size_t nlen;

		if (parse_line(p, nl ? nl : end, e, &nlen)) {
			memcpy(pm->names + used, e->name, nlen);
			pm->names[used + nlen] = '\0';
			e->name = pm->names + used;
			e->seq = pm->n++;
			used += nlen + 1;
		}
		p = nl ? nl + 1 : end;
	}
	sort_and_fold(pm);
	return pm;
}

const char *perfmap_lookup(const struct perfmap *pm, uint64_t addr, uint64_t *off)
{
	size_t lo = 0, hi = pm->n, i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i > 0 && lo - i < ENCLOSING_SCAN; i--) {
		const struct pm_entry *e = &pm->v[i - 1];

		if (addr < e->end) {
			if (off)
				*off = addr - e->start;
			return e->name;
		}
	}
	return NULL;
}

size_t perfmap_count(const struct perfmap *pm)
{
	return pm->n;
}

void perfmap_free(struct perfmap *pm)
{
	if (!pm)
		return;
	free(pm->v);
	free(pm->names);
	free(pm);
}
