#include "rangealloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int grow(struct rangealloc_span **v, size_t n, size_t *cap)
{
	struct rangealloc_span *nv;
	size_t ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	nv = reallocarray(*v, ncap, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

int rangealloc_init(struct rangealloc *a, uint32_t size)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	if (!size)
		return 0;
	if (grow(&a->free, 0, &a->capfree))
		return -ENOMEM;
	a->free[0] = (struct rangealloc_span){0, size, 0};
	a->nfree = 1;
	return 0;
}

void rangealloc_destroy(struct rangealloc *a)
{
	free(a->free);
	free(a->held);
	memset(a, 0, sizeof(*a));
}

int rangealloc_alloc(struct rangealloc *a, uint32_t len, uint32_t *start)
{
	size_t i;

	if (!len)
		return -EINVAL;
	for (i = 0; i < a->nfree; i++) {
		struct rangealloc_span *s = &a->free[i];

		if (s->len < len)
			continue;
		*start = s->start;
		s->start += len;
		s->len -= len;
		if (!s->len) {
			memmove(s, s + 1, (a->nfree - i - 1) * sizeof(*s));
			a->nfree--;
		}
		a->used += len;
		return 0;
	}
	return -ENOSPC;
}

/* Insert at its sorted place and merge with the neighbours. */
int rangealloc_free(struct rangealloc *a, uint32_t start, uint32_t len)
{
	size_t lo = 0, hi = a->nfree;
	struct rangealloc_span *v;

	if (!len)
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->free[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	v = a->free;
	if (lo > 0 && v[lo - 1].start + v[lo - 1].len == start) {
		v[lo - 1].len += len;
		if (lo < a->nfree && start + len == v[lo].start) {
			v[lo - 1].len += v[lo].len;
			memmove(&v[lo], &v[lo + 1], (a->nfree - lo - 1) * sizeof(*v));
			a->nfree--;
		}
	} else if (lo < a->nfree && start + len == v[lo].start) {
		v[lo].start = start;
		v[lo].len += len;
	} else {
		if (grow(&a->free, a->nfree, &a->capfree))
			return -ENOMEM;
		v = a->free;
		memmove(&v[lo + 1], &v[lo], (a->nfree - lo) * sizeof(*v));
		v[lo] = (struct rangealloc_span){start, len, 0};
		a->nfree++;
	}
	a->used -= len;
	return 0;
}

int rangealloc_free_later(struct rangealloc *a, uint32_t start, uint32_t len, uint64_t free_at_ns)
{
	if (!len)
		return 0;
	if (grow(&a->held, a->nheld, &a->capheld))
		return -ENOMEM;
	a->held[a->nheld++] = (struct rangealloc_span){start, len, free_at_ns};
	return 0;
}

void rangealloc_reap(struct rangealloc *a, uint64_t now_ns)
{
	size_t i = 0;

	while (i < a->nheld) {
		struct rangealloc_span s = a->held[i];

		if (s.free_at_ns > now_ns || rangealloc_free(a, s.start, s.len)) {
			i++;
			continue;
		}
		a->held[i] = a->held[--a->nheld];
	}
}

uint32_t rangealloc_largest(const struct rangealloc *a)
{
	uint32_t best = 0;
	size_t i;

	for (i = 0; i < a->nfree; i++)
		if (a->free[i].len > best)
			best = a->free[i].len;
	return best;
}

int rangealloc_alloc_wait(struct rangealloc *a, uint32_t len, uint32_t *start,
			  uint64_t (*now_ns)(void))
{
	uint64_t due = 0, now;
	size_t i;

	rangealloc_reap(a, now_ns());
	if (!rangealloc_alloc(a, len, start))
		return 0;
	if (!a->nheld)
		return -ENOSPC;
	for (i = 0; i < a->nheld; i++)
		due = a->held[i].free_at_ns > due ? a->held[i].free_at_ns : due;
	now = now_ns();
	if (due > now) {
		struct timespec ts = {(time_t)((due - now) / 1000000000ull),
				      (long)((due - now) % 1000000000ull)};

		nanosleep(&ts, NULL);
	}
	rangealloc_reap(a, due);
	return rangealloc_alloc(a, len, start);
}

uint32_t rangealloc_free_tail(const struct rangealloc *a)
{
	const struct rangealloc_span *last = a->nfree ? &a->free[a->nfree - 1] : NULL;

	return last && last->start + last->len == a->size ? last->start : a->size;
}
