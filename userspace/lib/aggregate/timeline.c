#include "timeline.h"
#include "aggregate.h"

#include <stdlib.h>
#include <string.h>

#define TIMELINE_FIRST_CAP 256u

void timeline_budget_init(struct timeline_budget *b)
{
	memset(b, 0, sizeof(*b));
	b->max_bytes = TIMELINE_BYTES_DEFAULT;
	b->per_proc_max = TIMELINE_PER_PROC_DEFAULT;
}

bool timeline_keeps(int type)
{
	return type == AGG_CPU || type == AGG_OFFCPU || type == AGG_CUDA ||
	       type == AGG_GPU_DRIVER || type == AGG_MEMORY;
}

uint64_t timeline_start(int type, uint64_t realtime_ns, uint64_t weight)
{
	if (type == AGG_OFFCPU && weight <= realtime_ns)
		return realtime_ns - weight;
	return realtime_ns;
}

static uint32_t next_cap(const struct timeline_budget *b, const struct timeline_ring *r)
{
	uint64_t have = r->cap, want = have ? 2 * have : TIMELINE_FIRST_CAP;

	if (want > b->per_proc_max)
		want = b->per_proc_max;
	if (want <= have)
		return 0;
	if (b->bytes + (want - have) * sizeof(struct timeline_event) > b->max_bytes)
		return 0;
	return (uint32_t)want;
}

static const struct timeline_event *ring_at(const struct timeline_ring *r, uint32_t i)
{
	uint32_t oldest = (r->head + r->cap - r->n) % r->cap;

	return &r->ev[(oldest + i) % r->cap];
}

/* A bigger ring, the events copied oldest first.  False when the
 * allocator says no: the ring then wraps at its size. */
static bool grow(struct timeline_budget *b, struct timeline_ring *r, uint32_t cap)
{
	struct timeline_event *ev = malloc((size_t)cap * sizeof(*ev));
	uint32_t i;

	if (!ev)
		return false;
	for (i = 0; i < r->n; i++)
		ev[i] = *ring_at(r, i);
	free(r->ev);
	b->bytes += (uint64_t)(cap - r->cap) * sizeof(*ev);
	r->ev = ev;
	r->cap = cap;
	r->head = r->n;
	return true;
}

static void unlink_tl(struct timeline *tl)
{
	struct timeline_budget *b = tl->budget;

	if (tl->newer)
		tl->newer->older = tl->older;
	else if (b->newest == tl)
		b->newest = tl->older;
	if (tl->older)
		tl->older->newer = tl->newer;
	else if (b->oldest == tl)
		b->oldest = tl->newer;
	tl->newer = tl->older = NULL;
}

/* tl fed now: to the front of the list. */
static void touch(struct timeline *tl, uint64_t start_ns)
{
	struct timeline_budget *b = tl->budget;

	if (start_ns > tl->fed_ns)
		tl->fed_ns = start_ns;
	if (b->newest == tl)
		return;
	unlink_tl(tl);
	tl->older = b->newest;
	if (b->newest)
		b->newest->newer = tl;
	b->newest = tl;
	if (!b->oldest)
		b->oldest = tl;
}

/* Free the timeline fed longest ago, if it is not keep and has been idle
 * TIMELINE_IDLE_NS at now_ns. */
static bool reclaim_one(struct timeline_budget *b, const struct timeline *keep, uint64_t now_ns)
{
	struct timeline *old = b->oldest;

	if (!old || old == keep || old->fed_ns + TIMELINE_IDLE_NS > now_ns)
		return false;
	b->reclaimed += timeline_count(old);
	*old->owner = NULL;
	timeline_free(old);
	return true;
}

/* A bigger capacity for r, reclaiming idle timelines while only the
 * global bound is in the way; 0 for none. */
static uint32_t room_for(struct timeline_budget *b, const struct timeline *tl,
			 const struct timeline_ring *r, uint64_t now_ns)
{
	uint32_t cap;

	while (!(cap = next_cap(b, r)) && r->cap < b->per_proc_max && reclaim_one(b, tl, now_ns))
		;
	return cap;
}

void timeline_add(struct timeline_budget *b, struct timeline **tlp, const struct timeline_event *e)
{
	struct timeline *tl = *tlp;
	struct timeline_ring *r;
	uint32_t cap;

	if (!b->per_proc_max)
		return;
	if (!tl) {
		tl = calloc(1, sizeof(*tl));
		if (!tl) {
			b->lost++;
			return;
		}
		tl->budget = b;
		tl->owner = tlp;
		*tlp = tl;
	}
	touch(tl, e->start_ns);
	r = &tl->ring[e->type == AGG_CPU ? TIMELINE_SAMPLES : TIMELINE_EVENTS];
	if (r->n == r->cap && (cap = room_for(b, tl, r, e->start_ns)))
		grow(b, r, cap);
	if (!r->cap) {
		b->lost++;
		return;
	}
	if (r->n == r->cap) {
		tl->evicted++;
		b->evicted++;
	} else {
		r->n++;
	}
	r->ev[r->head] = *e;
	r->head = (r->head + 1) % r->cap;
	b->events++;
}

void timeline_free(struct timeline *tl)
{
	int i;

	if (!tl)
		return;
	unlink_tl(tl);
	for (i = 0; i < TIMELINE_RINGS; i++) {
		tl->budget->bytes -= (uint64_t)tl->ring[i].cap * sizeof(struct timeline_event);
		free(tl->ring[i].ev);
	}
	free(tl);
}

uint32_t timeline_count(const struct timeline *tl)
{
	return tl->ring[TIMELINE_SAMPLES].n + tl->ring[TIMELINE_EVENTS].n;
}

const struct timeline_event *timeline_at(const struct timeline *tl, uint32_t i)
{
	const struct timeline_ring *samples = &tl->ring[TIMELINE_SAMPLES];

	if (i < samples->n)
		return ring_at(samples, i);
	return ring_at(&tl->ring[TIMELINE_EVENTS], i - samples->n);
}
