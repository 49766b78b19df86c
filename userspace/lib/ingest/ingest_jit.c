/* ingest_jit.c: JIT code named after it ran.  A frame in anonymous code
 * that no perf map (or jitdump) names yet gets a frame of its own per
 * address, not the shared "[anon]": when the process's map is read again
 * and names the address (the JIT wrote or grew its map after the code
 * first ran), that frame is renamed, and the samples taken before the map
 * add up with those after it in every dump (dumps copy frames by name).
 * Bounded: at most ANON_FRAMES_PER_PROC addresses per process and
 * ANON_FRAMES_MAX in all wait for a name (more share "[anon]"), and a
 * process's frames are made again for others once it is gone. */
#include <errno.h>
#include <stdlib.h>

#include "array.h"
#include "ingest.h"
#include "ingest_int.h"
#include "symbolize.h"

#define ANON_FRAMES_PER_PROC 1024
#define ANON_FRAMES_MAX 65536

/* 0, or -ENOMEM (then ids is unchanged). */
static int push(struct ingest_anon_ids *ids, uint32_t id)
{
	if (array_grow((void **)&ids->ids, &ids->cap, ids->n + 1, sizeof(*ids->ids)))
		return -ENOMEM;
	ids->ids[ids->n++] = id;
	return 0;
}

/* A frame id of a process gone back to the pool (its stacks went with
 * it).  One that cannot be kept (no memory) is left in the dictionary,
 * no longer counted as in use. */
static void pool_put(struct ingest_anon_pool *pool, uint32_t id)
{
	if (pool->live)
		pool->live--;
	push(&pool->free, id);
}

/* A frame id p's stacks may hold, no longer waiting: kept until p goes.
 * If it cannot be (no memory), it stays in the dictionary for good. */
static void keep(struct proc_ingest *pi, uint32_t id)
{
	if (push(&pi->anon_kept, id) && pi->anon_pool && pi->anon_pool->live)
		pi->anon_pool->live--;
}

int64_t ingest_anon_frame(struct ingest *in, struct proc *p, uint64_t addr, uint32_t kind,
			  const char *name, const struct sym_module *mod, int64_t shared)
{
	struct proc_ingest *pi = p->ing;
	struct ingest_anon_pool *pool = &in->anon;
	int64_t id;
	uint64_t v;

	if (hashmap_get(&pi->anon_frames, addr, &v))
		return (int64_t)v - 1;
	if (pi->anon_frames.len + pi->anon_kept.n >= ANON_FRAMES_PER_PROC ||
	    pool->live >= ANON_FRAMES_MAX)
		return shared;
	if (pool->free.n) {
		id = pool->free.ids[pool->free.n - 1];
		if (aggregate_rename_frame(in->agg, (uint32_t)id, kind, name, mod->path,
					   mod->build_id))
			return shared;
		pool->free.n--;
	} else if ((id = aggregate_frame_own(in->agg, kind, name, mod->path, mod->build_id)) < 0) {
		return shared;
	}
	pool->live++;
	pi->anon_pool = pool;
	if (hashmap_put(&pi->anon_frames, addr, (uint64_t)id + 1)) {
		pool_put(pool, (uint32_t)id); /* no stack holds it yet */
		return shared;
	}
	return id;
}

/* Each address of p still waiting for a name, looked up in the map read
 * now: those it names are renamed, and kept (p's stacks hold them) until
 * p goes. */
static void rename_waiting(struct ingest *in, struct proc *p, struct buf *name)
{
	struct proc_ingest *pi = p->ing;
	struct sym_module mod;
	uint64_t addr, v;
	uint32_t kind;
	size_t it = 0;

	while (hashmap_next(&pi->anon_frames, &it, &addr, &v)) {
		buf_reset(name);
		kind = FRAME_UNKNOWN;
		if (symbolizer_user(in->sym, (int)p->pid, &p->maps, addr, false, name, &kind, &mod) ||
		    !buf_cstr(name) || kind == FRAME_UNKNOWN || symbolizer_waiting(in->sym))
			continue;
		if (aggregate_rename_frame(in->agg, (uint32_t)(v - 1), kind, name->data, mod.path,
					   mod.build_id))
			continue;
		hashmap_del(&pi->anon_frames, addr);
		keep(pi, (uint32_t)(v - 1));
		in->c.anon_frames_named++;
	}
}

void ingest_anon_rename(struct ingest *in, struct proc *p, struct buf *name)
{
	struct proc_ingest *pi = p->ing;
	uint64_t gen;

	if (!pi->anon_frames.len)
		return;
	gen = symbolizer_perfmap_gen(in->sym, (int)p->pid);
	if (!gen || gen == pi->anon_gen)
		return;
	pi->anon_gen = gen;
	rename_waiting(in, p, name);
}

/* A new program: its map names other code, so the old program's frames
 * wait no more (they stay as they are, kept until the process goes). */
void ingest_anon_retire(struct proc_ingest *pi)
{
	uint64_t v;
	size_t it = 0;

	while (hashmap_next(&pi->anon_frames, &it, NULL, &v))
		keep(pi, (uint32_t)(v - 1));
	hashmap_free(&pi->anon_frames);
	pi->anon_gen = 0;
}

void ingest_anon_release(struct proc_ingest *pi)
{
	uint64_t v;
	size_t it = 0, i;

	if (pi->anon_pool) {
		while (hashmap_next(&pi->anon_frames, &it, NULL, &v))
			pool_put(pi->anon_pool, (uint32_t)(v - 1));
		for (i = 0; i < pi->anon_kept.n; i++)
			pool_put(pi->anon_pool, pi->anon_kept.ids[i]);
	}
	hashmap_free(&pi->anon_frames);
	free(pi->anon_kept.ids);
	pi->anon_kept = (struct ingest_anon_ids){ 0 };
	pi->anon_pool = NULL;
}

void ingest_anon_pool_free(struct ingest *in)
{
	size_t i;

	/* Processes freed after ingest (proctable_free) give nothing back. */
	for (i = 0; in->pt && i < in->pt->n; i++)
		if (in->pt->all[i]->ing)
			in->pt->all[i]->ing->anon_pool = NULL;
	free(in->anon.free.ids);
	in->anon = (struct ingest_anon_pool){ 0 };
}
