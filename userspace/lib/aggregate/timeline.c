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

static uint32_t next_cap(const struct timeline_budget *b, const struct timeline *tl)
{
	uint64_t have = tl->cap, want = have ? 2 * have : TIMELINE_FIRST_CAP;

	if (want > b->per_proc_max)
		want = b->per_proc_max;
	if (want <= have)
		return 0;
	if (b->bytes + (want - have) * sizeof(struct timeline_event) > b->max_bytes)
		return 0;
	return (uint32_t)want;
}

/* A bigger ring, the events copied oldest first.  False when the bounds
 * or the allocator say no: the ring then wraps at its size. */
static bool grow(struct timeline_budget *b, struct timeline *tl, uint32_t cap)
{
	struct timeline_event *ev = malloc((size_t)cap * sizeof(*ev));
	uint32_t i;

	if (!ev)
		return false;
	for (i = 0; i < tl->n; i++)
		ev[i] = *timeline_at(tl, i);
	free(tl->ev);
	b->bytes += (uint64_t)(cap - tl->cap) * sizeof(*ev);
	tl->ev = ev;
	tl->cap = cap;
	tl->head = tl->n;
	return true;
}

void timeline_add(struct timeline_budget *b, struct timeline **tlp, const struct timeline_event *e)
{
	struct timeline *tl = *tlp;
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
		*tlp = tl;
	}
	if (tl->n == tl->cap && (cap = next_cap(b, tl)))
		grow(b, tl, cap);
	if (!tl->cap) {
		b->lost++;
		return;
	}
	if (tl->n == tl->cap) {
		tl->evicted++;
		b->evicted++;
	} else {
		tl->n++;
	}
	tl->ev[tl->head] = *e;
	tl->head = (tl->head + 1) % tl->cap;
	b->events++;
}

void timeline_free(struct timeline *tl)
{
	if (!tl)
		return;
	tl->budget->bytes -= (uint64_t)tl->cap * sizeof(*tl->ev);
	free(tl->ev);
	free(tl);
}

const struct timeline_event *timeline_at(const struct timeline *tl, uint32_t i)
{
	uint32_t oldest = (tl->head + tl->cap - tl->n) % tl->cap;

	return &tl->ev[(oldest + i) % tl->cap];
}
