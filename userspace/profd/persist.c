/* persist.c: the daemon's history database: open it (and prune) at
 * start, flush every --flush-interval, prune every minute, flush once more
 * on exit.  A crash loses at most one flush interval plus the 1 s
 * housekeeping tick that runs the flush. */
#include <errno.h>
#include <string.h>

#include "daemon.h"
#include "persist.h"
#include "log.h"

/* Open the history database and drop what is past the retention before
 * sampling starts (a large first prune must not stall the loop later).
 * Without it profd still profiles, from memory only. */
void persist_open(struct daemon *d)
{
	struct history_opts ho = { .bucket_ns = d->cfg.bucket_ns };
	uint64_t now = clock_realtime_ns();

	if (d->cfg.no_history)
		return;
	d->hist = history_open(d->cfg.state_dir, &ho);
	if (!d->hist) {
		log_warn("profd: history unavailable (%s): profiles are kept in memory only",
			 strerror(errno));
		return;
	}
	history_prune(d->hist, now > d->cfg.retention_ns ? now - d->cfg.retention_ns : 0,
		      d->cfg.history_max_bytes, NULL);
	persist_snap_stats(d);
	d->flush_next_mono_ns = clock_mono_ns() + d->cfg.flush_interval_ns;
	d->prune_next_mono_ns = clock_mono_ns() + 60ull * 1000000000ull;
}

/* Figures for `profctl stats`, read here where the database is ours
 * anyway, so a stats request never waits for a flush. */
void persist_snap_stats(struct daemon *d)
{
	d->hist_snap_ok = history_stats(d->hist, &d->hist_snap) == 0;
}

void persist_flush(struct daemon *d)
{
	struct agg_flush_stats fs;
	uint64_t t0 = clock_mono_ns();

	if (!d->hist)
		return;
	d->flushes++;
	if (aggregate_flush(&d->agg, &d->pt, d->hist, clock_realtime_ns(), &fs)) {
		d->flush_errors++;
		log_warn("profd: history flush failed: %s (kept in memory, retried)", strerror(-fs.err));
	}
	d->flush_rows += fs.rows;
	d->flush_refused += fs.refused;
	d->flush_ns_last = clock_mono_ns() - t0;
	/* The row counts are as of the last prune (a minute at most): they
	 * take a scan of each table. */
	d->hist_snap_ok = history_stats_light(d->hist, &d->hist_snap) == 0;
}

void persist_tick(struct daemon *d)
{
	uint64_t mono = clock_mono_ns();

	if (!d->hist || mono < d->flush_next_mono_ns)
		return;
	persist_flush(d);
	/* On a fixed grid, so flushes do not drift by the tick. */
	d->flush_next_mono_ns += d->cfg.flush_interval_ns;
	if (d->flush_next_mono_ns <= mono)
		d->flush_next_mono_ns = mono + d->cfg.flush_interval_ns;
}

bool persist_prune_due(struct daemon *d, struct history_stats *hs, bool *hs_ok)
{
	uint64_t mono = clock_mono_ns();

	if (!d->hist || mono < d->prune_next_mono_ns)
		return false;
	history_prune(d->hist, clock_realtime_ns() - d->cfg.retention_ns, d->cfg.history_max_bytes,
		      NULL);
	*hs_ok = history_stats(d->hist, hs) == 0;
	d->prune_next_mono_ns = mono + 60ull * 1000000000ull;
	return true;
}
