/* history_prune.c: retention and the size cap.  Old buckets go first (by
 * age, then oldest-first until the file fits), then whatever nothing
 * refers to any more: processes without samples, stacks no sample uses,
 * frames no stack or thread uses, modules no frame is in.  Freed pages go
 * back to the file system (auto_vacuum=INCREMENTAL, then a WAL
 * checkpoint). */
#include "history_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Keep this much under the cap, so the next flushes do not prune again
 * at once (a little hysteresis). */
#define PRUNE_TARGET_PERCENT 90
#define PRUNE_MAX_ROUNDS 32

struct hq_series {
	int64_t id;
	uint64_t width;
};

struct prune_set {
	int64_t *procs;
	size_t nprocs, procs_cap;
	struct hq_series *series;
	size_t nseries, series_cap;
};

static int collect(struct history *h, enum hist_stmt which, struct prune_set *ps)
{
	sqlite3_stmt *s = hist_stmt(h, which);
	int rc, err = 0;

	while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (which == HS_PROC_ALL) {
			err = hist_grow((void **)&ps->procs, &ps->procs_cap, ps->nprocs + 1,
					sizeof(*ps->procs));
			if (!err)
				ps->procs[ps->nprocs++] = sqlite3_column_int64(s, 0);
			continue;
		}
		err = hist_grow((void **)&ps->series, &ps->series_cap, ps->nseries + 1,
				sizeof(*ps->series));
		if (!err) {
			ps->series[ps->nseries].id = sqlite3_column_int64(s, 0);
			ps->series[ps->nseries++].width = (uint64_t)sqlite3_column_int64(s, 1);
		}
	}
	sqlite3_reset(s);
	if (err)
		return err;
	return rc == SQLITE_DONE ? 0 : hist_fail(h, rc, "listing what to prune");
}

static int load_set(struct history *h, struct prune_set *ps)
{
	int err;

	memset(ps, 0, sizeof(*ps));
	err = collect(h, HS_PROC_ALL, ps);
	return err ? err : collect(h, HS_SERIES_ALL, ps);
}

static void free_set(struct prune_set *ps)
{
	free(ps->procs);
	free(ps->series);
}

static void bind3(sqlite3_stmt *s, int64_t a, int64_t b, int64_t c)
{
	sqlite3_bind_int64(s, 1, a);
	sqlite3_bind_int64(s, 2, b);
	sqlite3_bind_int64(s, 3, c);
}

/* Delete one process's buckets of one series that start before cut. */
static int delete_cell_range(struct history *h, int64_t proc, int64_t series, uint64_t cut,
			     struct history_prune_stats *st)
{
	sqlite3_stmt *s = hist_stmt(h, HS_PRUNE_COUNT);
	uint64_t rows = 0, samples = 0;
	int rc, err;

	bind3(s, proc, series, (int64_t)cut);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		rows = (uint64_t)sqlite3_column_int64(s, 0);
		samples = (uint64_t)sqlite3_column_int64(s, 1);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_ROW)
		return hist_fail(h, rc, "counting old samples");
	if (!rows)
		return 0;
	bind3(hist_stmt(h, HS_PRUNE_DELETE), proc, series, (int64_t)cut);
	err = hist_step_done(h, HS_PRUNE_DELETE, "deleting old samples");
	if (err)
		return err;
	s = hist_stmt(h, HS_PRUNE_PROC_SAMPLES);
	sqlite3_bind_int64(s, 1, proc);
	sqlite3_bind_int64(s, 2, (int64_t)samples);
	err = hist_step_done(h, HS_PRUNE_PROC_SAMPLES, "counting process samples");
	st->rows_deleted += rows;
	st->samples_deleted += samples;
	return err;
}

/* cut[i]: buckets of series i starting before it go. */
static int delete_before(struct history *h, const struct prune_set *ps, const uint64_t *cut,
			 struct history_prune_stats *st)
{
	uint64_t rows = st->rows_deleted, samples = st->samples_deleted;
	size_t i, j;
	int err = 0;

	for (j = 0; j < ps->nseries; j++)
		for (i = 0; i < ps->nprocs && !err && cut[j]; i++)
			err = delete_cell_range(h, ps->procs[i], ps->series[j].id, cut[j], st);
	if (!err && st->rows_deleted > rows)
		err = hist_meta_add(h, "sample_rows", -(int64_t)(st->rows_deleted - rows));
	if (!err && st->samples_deleted > samples)
		err = hist_meta_add(h, "samples", -(int64_t)(st->samples_deleted - samples));
	return err;
}

/* Run a DELETE (with cut_ns as ?1 when it takes one), adding the rows it
 * removed to *count. */
static int delete_unused(struct history *h, enum hist_stmt which, uint64_t cut_ns, uint64_t *count,
			 const char *what)
{
	sqlite3_stmt *s = hist_stmt(h, which);
	int err;

	if (sqlite3_bind_parameter_count(s))
		sqlite3_bind_int64(s, 1, (int64_t)cut_ns);
	err = hist_step_done(h, which, what);
	if (!err)
		*count += (uint64_t)sqlite3_changes(h->db);
	return err;
}

/* What no remaining sample can use: processes without samples, and
 * stacks and frames last used (within mark_every_ns) before every bucket
 * that is left, then the modules of the frames that went; cut_ns is a
 * bound below which no bucket starts any more.  Ids may be reused after
 * this, so the write caches start over. */
static int collect_garbage(struct history *h, uint64_t cut_ns, struct history_prune_stats *st)
{
	uint64_t frames = st->frames_deleted, before = st->stacks_deleted + frames, rss_rows = 0;
	int err;

	err = delete_unused(h, HS_PROCS_EMPTY, 0, &st->procs_deleted,
			    "deleting processes without samples");
	if (!err) /* RSS points as old as the buckets gone, or of a process gone */
		err = delete_unused(h, HS_RSS_UNUSED, cut_ns, &rss_rows, "deleting RSS points");
	if (err || cut_ns <= h->o.mark_every_ns)
		return err;
	cut_ns -= h->o.mark_every_ns;
	err = delete_unused(h, HS_STACKS_UNUSED, cut_ns, &st->stacks_deleted,
			    "deleting unused stacks");
	if (!err)
		err = delete_unused(h, HS_FRAMES_UNUSED, cut_ns, &st->frames_deleted,
				    "deleting unused frames");
	/* Only frames refer to modules: the scan is skipped when none went. */
	if (!err && st->frames_deleted > frames)
		err = delete_unused(h, HS_MODULES_UNUSED, 0, &st->modules_deleted,
				    "deleting unused modules");
	if (st->stacks_deleted + st->frames_deleted > before)
		hist_caches_reset(h);
	return err;
}

static int txn(struct history *h, enum hist_stmt which, const char *what)
{
	int rc = sqlite3_step(hist_stmt(h, which));

	sqlite3_reset(h->st[which]);
	if (rc == SQLITE_DONE)
		return 0;
	if (which == HS_ROLLBACK)
		return 0;
	return hist_fail(h, rc, what);
}

/* Delete, collect and commit as one transaction (st counts only what
 * was committed). */
static int delete_txn(struct history *h, const struct prune_set *ps, const uint64_t *cut,
		      uint64_t cut_ns, struct history_prune_stats *st)
{
	struct history_prune_stats before = *st;
	int err = txn(h, HS_BEGIN, "starting a prune");

	if (err)
		return err;
	err = delete_before(h, ps, cut, st);
	if (!err)
		err = collect_garbage(h, cut_ns, st);
	if (!err)
		err = txn(h, HS_COMMIT, "committing a prune");
	if (err) {
		if (!sqlite3_get_autocommit(h->db))
			txn(h, HS_ROLLBACK, NULL);
		hist_caches_reset(h);
		*st = before;
	}
	return err;
}

/* Fold min or max(bucket) of one process and series, as a start in ns. */
static int span_one(struct history *h, enum hist_stmt which, int64_t proc,
		    const struct hq_series *se, uint64_t *out)
{
	sqlite3_stmt *s = hist_stmt(h, which);
	uint64_t v;
	int rc;

	sqlite3_bind_int64(s, 1, proc);
	sqlite3_bind_int64(s, 2, se->id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
		v = (uint64_t)sqlite3_column_int64(s, 0) * se->width;
		if (which == HS_MIN_BUCKET ? v < *out : v > *out)
			*out = v;
	}
	sqlite3_reset(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : hist_fail(h, rc, "finding old buckets");
}

/* The oldest and newest bucket start stored (ns), over every series;
 * each is one seek at an end of a (proc, series) range of the key. */
static int bucket_span(struct history *h, const struct prune_set *ps, uint64_t *lo, uint64_t *hi)
{
	size_t i, j;
	int err = 0;

	*lo = UINT64_MAX;
	*hi = 0;
	for (i = 0; i < ps->nprocs && !err; i++)
		for (j = 0; j < ps->nseries && !err; j++) {
			err = span_one(h, HS_MIN_BUCKET, ps->procs[i], &ps->series[j], lo);
			if (!err)
				err = span_one(h, HS_MAX_BUCKET, ps->procs[i], &ps->series[j], hi);
		}
	return err;
}

static int used_bytes(struct history *h, uint64_t *used)
{
	uint64_t total, freeb;
	int err = hist_file_bytes(h, &total, &freeb);

	*used = err ? 0 : total - freeb;
	return err;
}

static int prune_age(struct history *h, uint64_t older_than, struct history_prune_stats *st)
{
	uint64_t *cut, cut_ns = older_than;
	struct prune_set ps;
	size_t j;
	int err = load_set(h, &ps);

	cut = calloc(ps.nseries + 1, sizeof(*cut));
	if (!err && !cut)
		err = -ENOMEM;
	/* Bucket n goes once it ended, (n + 1) * width <= older_than. */
	for (j = 0; !err && j < ps.nseries; j++) {
		if (!ps.series[j].width)
			continue;
		cut[j] = older_than / ps.series[j].width;
		if (cut[j] * ps.series[j].width < cut_ns)
			cut_ns = cut[j] * ps.series[j].width;
	}
	if (!err)
		err = delete_txn(h, &ps, cut, cut_ns, st);
	free(cut);
	free_set(&ps);
	return err;
}

/* One round: cut off the oldest share of the time span in proportion to
 * the excess, at least one bucket, never the newest.  1 = nothing left to
 * cut, 0 = cut, -errno. */
static int prune_size_round(struct history *h, uint64_t used, uint64_t max_bytes,
			    struct history_prune_stats *st)
{
	uint64_t target = max_bytes / 100 * PRUNE_TARGET_PERCENT, lo, hi, cutoff, *cut;
	struct prune_set ps;
	double share = (double)(used - target) / (double)used;
	size_t j;
	int err = load_set(h, &ps);

	if (!err)
		err = bucket_span(h, &ps, &lo, &hi);
	if (err || lo >= hi) {
		free_set(&ps);
		return err ? err : 1;
	}
	cutoff = lo + (uint64_t)((double)(hi - lo) * share);
	if (cutoff <= lo)
		cutoff = lo + 1;
	if (cutoff > hi)
		cutoff = hi;
	cut = calloc(ps.nseries + 1, sizeof(*cut));
	/* Buckets starting before cutoff: n * width < cutoff. */
	for (j = 0; cut && j < ps.nseries; j++)
		if (ps.series[j].width)
			cut[j] = (cutoff + ps.series[j].width - 1) / ps.series[j].width;
	err = cut ? delete_txn(h, &ps, cut, cutoff, st) : -ENOMEM;
	free(cut);
	free_set(&ps);
	return err;
}

static int prune_size(struct history *h, uint64_t max_bytes, struct history_prune_stats *st)
{
	uint64_t used;
	int round, err = 0;

	for (round = 0; round < PRUNE_MAX_ROUNDS; round++) {
		err = used_bytes(h, &used);
		if (err || used <= max_bytes)
			return err;
		err = prune_size_round(h, used, max_bytes, st);
		if (err)
			break;
	}
	if (err == 1)
		log_warn("history: %s: only the newest bucket is left and the file still holds "
			 "%llu bytes, over the cap of %llu", h->path, (unsigned long long)used,
			 (unsigned long long)max_bytes);
	return err > 0 ? 0 : err;
}

/* Give free pages back when the file is over the cap or a quarter free;
 * otherwise keep them for the next flushes to reuse (moving pages and
 * growing the file again would only cost I/O).  In WAL mode the file
 * shrinks at the checkpoint. */
static void shrink(struct history *h, uint64_t max_bytes)
{
	uint64_t freeb = 0, total;
	int rc;

	if (hist_file_bytes(h, &total, &freeb) || !freeb)
		return;
	if (!(max_bytes && total > max_bytes) && freeb < total / 4)
		return;
	while ((rc = sqlite3_step(hist_stmt(h, HS_INCR_VACUUM))) == SQLITE_ROW)
		;
	sqlite3_reset(h->st[HS_INCR_VACUUM]);
	if (rc != SQLITE_DONE)
		hist_fail(h, rc, "giving free pages back");
	rc = sqlite3_wal_checkpoint_v2(h->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	if (rc != SQLITE_OK && rc != SQLITE_BUSY)
		hist_fail(h, rc, "checkpointing");
}

static void oldest_kept(struct history *h, struct history_prune_stats *st)
{
	struct prune_set ps;
	uint64_t lo, hi;

	st->oldest_kept_ns = 0;
	if (!load_set(h, &ps) && !bucket_span(h, &ps, &lo, &hi) && lo != UINT64_MAX)
		st->oldest_kept_ns = lo;
	free_set(&ps);
}

int history_prune(struct history *h, uint64_t older_than_ns, uint64_t max_bytes,
		  struct history_prune_stats *st)
{
	struct history_prune_stats local;
	uint64_t t0 = clock_mono_ns(), t1;
	int err;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	if (h->in_txn)
		return -EBUSY;
	if ((h->broken || !h->db) && (err = hist_recover(h)) != 0)
		return err;
	err = hist_file_bytes(h, &st->bytes_before, NULL);
	if (!err && older_than_ns)
		err = prune_age(h, older_than_ns, st);
	if (!err && max_bytes)
		err = prune_size(h, max_bytes, st);
	t1 = clock_mono_ns();
	if (!err)
		shrink(h, max_bytes);
	if (hist_file_bytes(h, &st->bytes_after, NULL) || st->bytes_after > st->bytes_before)
		st->bytes_after = st->bytes_before;
	h->s.bytes_pruned += st->bytes_before - st->bytes_after;
	oldest_kept(h, st);
	st->shrink_ns = clock_mono_ns() - t1;
	st->elapsed_ns = clock_mono_ns() - t0;
	h->s.prunes++;
	h->s.rows_pruned += st->rows_deleted;
	h->s.last_prune_ns = st->elapsed_ns;
	if (st->rows_deleted)
		log_info("history: pruned %llu rows, %llu bytes given back, in %llu ms",
			 (unsigned long long)st->rows_deleted,
			 (unsigned long long)(st->bytes_before - st->bytes_after),
			 (unsigned long long)(st->elapsed_ns / 1000000));
	return err;
}
