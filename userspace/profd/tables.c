/* tables.c: native unwind tables are built off the sample path.  Building
 * a table takes 1-50 ms per new binary; after start-up, or during an exec
 * storm, doing it inline would stall ingest and every profctl request
 * behind it.  Requests are queued (one per pid) and the main loop works
 * them off a few milliseconds at a time between events. */
#include <stdlib.h>

#include "daemon.h"
#include "unwinder.h"

#define TABLES_SLICE_NS (5ull * 1000000ull)

void tables_request(struct daemon *d, uint32_t pid)
{
	uint32_t *q;

	if (hashmap_get(&d->tables_pending, pid, NULL))
		return;
	if (d->tables_n == d->tables_cap) {
		size_t cap = d->tables_cap ? d->tables_cap * 2 : 256;

		q = realloc(d->tables_queue, cap * sizeof(*q));
		if (!q)
			return; /* the next unknown-code walk asks again */
		d->tables_queue = q;
		d->tables_cap = cap;
	}
	if (hashmap_put(&d->tables_pending, pid, 1))
		return;
	d->tables_queue[d->tables_n++] = pid;
}

void tables_forget(struct daemon *d, uint32_t pid)
{
	struct unwinder *u = d->sampler ? sampler_unwinder(d->sampler) : NULL;

	hashmap_del(&d->tables_pending, pid); /* a queued entry is skipped */
	if (u)
		unwinder_remove_process(u, (int)pid);
}

bool tables_pending(const struct daemon *d)
{
	return d->tables_head < d->tables_n;
}

void tables_work(struct daemon *d)
{
	struct unwinder *u = d->sampler ? sampler_unwinder(d->sampler) : NULL;
	uint64_t start = daemon_mono_ns();

	while (u && tables_pending(d) && daemon_mono_ns() - start < TABLES_SLICE_NS) {
		uint32_t pid = d->tables_queue[d->tables_head++];

		if (hashmap_del(&d->tables_pending, pid))
			unwinder_add_process(u, (int)pid); /* also refreshes */
	}
	if (!tables_pending(d))
		d->tables_head = d->tables_n = 0;
}

/* --pid: the few processes asked for get their tables before sampling
 * starts, so their first samples unwind as well as the rest.  (With
 * --all-processes that would delay the start by the whole machine's
 * binaries; those come with each process's first sample instead.) */
void tables_prebuild(struct daemon *d)
{
	struct unwinder *u = d->sampler ? sampler_unwinder(d->sampler) : NULL;
	size_t i;

	for (i = 0; u && i < d->cfg.npids; i++) {
		struct proc *p = proctable_get(&d->pt, d->cfg.pids[i], NULL);

		if (!p || unwinder_add_process(u, (int)d->cfg.pids[i]))
			continue; /* the first sample asks again */
		ingest_unwind_requested(p);
	}
}

void tables_free(struct daemon *d)
{
	free(d->tables_queue);
	hashmap_free(&d->tables_pending);
}
