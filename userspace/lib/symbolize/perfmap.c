#include "perfmap.h"
#include "array.h"
#include "hexnum.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* How far back a lookup walks past nested or stale shorter entries. */
#define ENCLOSING_SCAN 8

struct pm_entry {
	uint64_t start, end;
	size_t seq;	 /* order added: later wins */
	size_t name_off; /* in names */
};

struct perfmap {
	struct pm_entry *v;
	size_t n, cap;
	char *names;
	size_t used, names_cap;
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

struct perfmap *perfmap_new(void)
{
	return calloc(1, sizeof(struct perfmap));
}

int perfmap_add(struct perfmap *pm, uint64_t start, uint64_t size, const char *name, size_t len)
{
	struct pm_entry *e;

	if (!size || start + size < start || !len || memchr(name, '\0', len))
		return -EINVAL;
	if (pm->used + len + 1 > PERFMAP_MAX_BYTES)
		return -EFBIG;
	if (array_grow((void **)&pm->v, &pm->cap, pm->n + 1, sizeof(*pm->v)) ||
	    array_grow((void **)&pm->names, &pm->names_cap, pm->used + len + 1, 1))
		return -ENOMEM;
	e = &pm->v[pm->n];
	e->start = start;
	e->end = start + size;
	e->seq = pm->n++;
	e->name_off = pm->used;
	memcpy(pm->names + pm->used, name, len);
	pm->names[pm->used + len] = '\0';
	pm->used += len + 1;
	return 0;
}

/* "START SIZE name" (hex) into pm: 0, or -ENOMEM (a bad line is skipped). */
static int add_line(struct perfmap *pm, const char *p, const char *end)
{
	uint64_t start, size;

	if (!perfmap_hex(&p, end, &start) || p >= end || *p != ' ')
		return 0;
	p++;
	if (!perfmap_hex(&p, end, &size) || p >= end || *p != ' ')
		return 0;
	p++;
	if (end > p && end[-1] == '\r')
		end--;
	return perfmap_add(pm, start, size, p, (size_t)(end - p)) == -ENOMEM ? -ENOMEM : 0;
}

int perfmap_add_text(struct perfmap *pm, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (add_line(pm, p, nl ? nl : end))
			return -ENOMEM;
		p = nl ? nl + 1 : end;
	}
	return 0;
}

static int cmp_entry(const void *pa, const void *pb)
{
	const struct pm_entry *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->seq < b->seq) - (a->seq > b->seq); /* newest first */
}

void perfmap_finish(struct perfmap *pm)
{
	size_t i, out = 0;

	if (pm->n)
		qsort(pm->v, pm->n, sizeof(*pm->v), cmp_entry);
	for (i = 0; i < pm->n; i++)
		if (!out || pm->v[out - 1].start != pm->v[i].start)
			pm->v[out++] = pm->v[i];
	pm->n = out;
}

struct perfmap *perfmap_parse(const char *text, size_t len)
{
	struct perfmap *pm = perfmap_new();

	if (!pm || perfmap_add_text(pm, text, len)) {
		perfmap_free(pm);
		errno = ENOMEM;
		return NULL;
	}
	perfmap_finish(pm);
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
			return pm->names + e->name_off;
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
