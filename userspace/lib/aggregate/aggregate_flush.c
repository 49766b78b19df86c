/* aggregate_flush.c: move counts from memory to the SQLite history.  Each
 * cell remembers how much of its count history holds (flushed), so a dump
 * is exactly history plus the unflushed remainder in memory, at any time
 * and across restarts; closed buckets held in full by history then leave
 * memory, which bounds it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "aggregate_int.h"
#include "history.h"
#include "identity.h"
#include "log.h"

static void fill_workload(const struct workload_id *w, struct history_proc *hp)
{
	if (!w)
		return; /* not read yet: history keeps what it has */
	hp->ident[HISTORY_ID_SERVICE] = w->service;
	hp->ident[HISTORY_ID_UNIT] = w->unit;
	hp->ident[HISTORY_ID_RUNTIME] = w->runtime;
	hp->ident[HISTORY_ID_CONTAINER] = w->container;
	hp->ident[HISTORY_ID_POD] = w->pod;
	hp->ident[HISTORY_ID_QOS] = w->qos;
	hp->ident[HISTORY_ID_SCRIPT] = w->script;
	hp->ident[HISTORY_ID_CGROUP] = w->cgroup;
	hp->ident[HISTORY_ID_RANK] = w->job.rank;
	hp->ident[HISTORY_ID_LOCAL_RANK] = w->job.local_rank;
	hp->ident[HISTORY_ID_WORLD_SIZE] = w->job.world_size;
	hp->ident[HISTORY_ID_JOB] = w->job.job;
}

static void fill_proc(const struct proc *p, struct history_proc *hp)
{
	memset(hp, 0, sizeof(*hp));
	hp->pid = p->pid;
	hp->ppid = p->ppid;
	hp->uid = p->uid;
	hp->start_time = p->start_time;
	hp->comm = p->comm;
	hp->exe = p->exe ? p->exe : "";
	hp->first_ns = p->first_ns;
	hp->last_ns = p->last_ns;
	hp->exited_ns = p->exited ? p->exit_ns : 0;
	fill_workload(p->wid, hp);
}

/* p's RSS points history does not hold yet; the last one written is
 * remembered for mark_flushed. */
static int flush_rss(struct history *h, struct proc *p, const struct history_proc *hp)
{
	uint64_t t, bytes;
	uint32_t i;
	int err = 0;

	p->profile->rss_written_ns = p->rss_flushed_ns;
	for (i = 0; p->rss && i < p->rss->n && !err; i++) {
		proctable_rss_point(p, i, &t, &bytes);
		if (t > p->rss_flushed_ns)
			err = history_add_rss(h, hp, t, bytes);
		if (!err && t > p->profile->rss_written_ns)
			p->profile->rss_written_ns = t;
	}
	return err == -ERANGE ? 0 : err; /* refused alone, as a malformed row */
}

static void forget_written(struct proc_profile *pp)
{
	free(pp->written);
	pp->written = NULL;
	pp->nwritten = 0;
}

/* Per-frame arrays of one row, sized once for the deepest stack. */
struct row_buf {
	uint32_t *kinds;
	const char **names;
	const struct ss_module **mods;
};

/* One history row for the unflushed part of a cell. */
static int add_cell(struct aggregate *a, struct history *h, const struct history_proc *hp,
		    struct agg_stack *st, const struct agg_cell *c, const struct row_buf *b)
{
	struct history_row r;
	uint32_t i;

	for (i = 0; i < st->depth; i++) {
		b->kinds[i] = a->dict->frames[st->frames[i]].kind;
		b->names[i] = a->dict->frames[st->frames[i]].name;
		b->mods[i] = stackset_frame_module(a->dict, st->frames[i]);
	}
	r.bucket_ns = (uint64_t)c->bucket * a->bucket_ns;
	r.tid = c->tid;
	r.thread = a->dict->frames[c->thread_frame].name;
	r.depth = st->depth;
	r.kinds = b->kinds;
	r.names = b->names;
	r.count = c->count - c->flushed;
	r.type = aggregate_type_name((int)c->type);
	r.memo = &st->memo;
	r.stored = c->flushed != 0;
	return history_add_in(h, hp, &r, b->mods);
}

static int flush_proc(struct aggregate *a, struct history *h, struct proc *p,
		      struct agg_flush_stats *st, const struct row_buf *b)
{
	struct proc_profile *pp = p->profile;
	struct history_proc hp;
	size_t i;
	int err;

	free(pp->written);
	pp->nwritten = 0;
	pp->written = malloc((pp->ncells ? pp->ncells : 1) * sizeof(*pp->written));
	if (!pp->written)
		return -ENOMEM;
	fill_proc(p, &hp);
	for (i = 0; i < pp->ncells; i++) {
		const struct agg_cell *c = &pp->cells[i];

		pp->written[i] = c->count; /* a refused row is not retried either */
		if (c->count == c->flushed)
			continue;
		err = add_cell(a, h, &hp, &pp->stacks[c->stack], c, b);
		if (err == -EINVAL || err == -ERANGE || err == -ENAMETOOLONG) {
			st->refused++; /* malformed for history: stays in memory only */
			continue;
		}
		if (err)
			return err;
		st->rows++;
	}
	pp->nwritten = pp->ncells;
	return flush_rss(h, p, &hp);
}

/* After a commit: history holds what flush_proc wrote of p, and nothing
 * added since (cells only grow at the end until drop_old_cells). */
static void mark_flushed(struct proc *p)
{
	struct proc_profile *pp = p->profile;
	size_t i;

	for (i = 0; i < pp->nwritten; i++)
		pp->cells[i].flushed = pp->written[i];
	if (pp->nwritten)
		p->rss_flushed_ns = pp->rss_written_ns;
	forget_written(pp);
}

/* Drop fully flushed cells of buckets before `keep_from`, rebuilding the
 * index over what remains. */
static size_t drop_old_cells(struct proc_profile *pp, uint32_t keep_from)
{
	size_t i, n = 0, dropped;

	for (i = 0; i < pp->ncells; i++) {
		const struct agg_cell *c = &pp->cells[i];

		if (c->bucket < keep_from && c->count == c->flushed)
			continue;
		pp->cells[n++] = *c;
	}
	dropped = pp->ncells - n;
	if (!dropped)
		return 0;
	pp->ncells = n;
	hashmap_free(&pp->cell_index);
	for (i = 0; i < n; i++) {
		const struct agg_cell *c = &pp->cells[i];
		uint64_t key = agg_cell_key(c->bucket, c->stack, c->tid, (int)c->type);

		while (hashmap_get(&pp->cell_index, key, NULL))
			key++;
		if (hashmap_put(&pp->cell_index, key, i + 1))
			break; /* lookups then miss and start new cells: still correct */
	}
	return dropped;
}

int aggregate_flush(struct aggregate *a, struct proctable *pt, struct history *h,
		    uint64_t now_ns, struct agg_flush_stats *st)
{
	/* Keep a few recent buckets whole: push windows and dumps of "the
	 * last minute" read them from memory. */
	uint32_t keep_from = (uint32_t)(now_ns / a->bucket_ns) - 3, depth = a->max_depth ? a->max_depth : 1;
	struct row_buf b = {
		.kinds = malloc(depth * sizeof(*b.kinds)),
		.names = malloc(depth * sizeof(*b.names)),
		.mods = malloc(depth * sizeof(*b.mods)),
	};
	size_t i;
	int err;

	memset(st, 0, sizeof(*st));
	if (!b.kinds || !b.names || !b.mods) {
		err = -ENOMEM;
		goto out;
	}
	err = history_begin(h);
	for (i = 0; !err && i < pt->n; i++) {
		if (!pt->all[i]->profile)
			continue;
		err = flush_proc(a, h, pt->all[i], st, &b);
		if (a->flush_yield)
			a->flush_yield(a->flush_yield_ctx);
	}
	if (err) {
		history_rollback(h);
		goto forget;
	}
	if (a->flush_io)
		a->flush_io(a->flush_yield_ctx, true);
	err = history_commit(h);
	if (a->flush_io)
		a->flush_io(a->flush_yield_ctx, false);
	if (err)
		goto forget;
	/* The table as it is now: entries may have moved or gone while the
	 * flush let others in; only what was written is marked. */
	for (i = 0; i < pt->n; i++) {
		if (!pt->all[i]->profile)
			continue;
		mark_flushed(pt->all[i]);
		st->cells_dropped += drop_old_cells(pt->all[i]->profile, keep_from);
	}
	a->cells -= st->cells_dropped;
	goto out;
forget:
	for (i = 0; i < pt->n; i++)
		if (pt->all[i]->profile)
			forget_written(pt->all[i]->profile);
out:
	st->err = err;
	free(b.kinds);
	free(b.names);
	free(b.mods);
	return err;
}
