/* ingest_rss: each process's resident set over time, a point per bucket
 * while it runs, so `profctl list` shows what grew and when.  The reads
 * (/proc/PID/stat) happen on the worker; this side only walks the table
 * a bounded step per tick and files the answers. */
#include "ingest.h"
#include "ingest_int.h"

#include "log.h"

/* Whether p is due a point: live, known, active since its last one (an
 * idle process's RSS is what it was) and a bucket past it. */
static bool rss_due(const struct proc *p, uint64_t mono_ns, uint64_t every_ns)
{
	if (p->exited || !p->start_time || p->samples + p->events == p->rss_activity)
		return false;
	/* A tenth early: the tick that asks is itself about a bucket apart. */
	return !p->rss_asked_mono_ns || mono_ns - p->rss_asked_mono_ns >= every_ns - every_ns / 10;
}

static void ask_rss(struct ingest *in, struct proc *p, uint64_t mono_ns)
{
	uint64_t bytes;
	int err;

	p->rss_asked_mono_ns = mono_ns;
	p->rss_activity = p->samples + p->events;
	p->rss_req++;
	if (in->be.rss) {
		in->be.rss(in->be.ctx, p->pid, p->start_time, p->rss_req);
		return;
	}
	err = proc_read_rss(in->pt->proc_root, p->pid, p->start_time, &bytes);
	ingest_rss_found(in, p->pid, p->start_time, p->rss_req, err, bytes);
}

void ingest_rss_step(struct ingest *in, uint64_t mono_ns, uint64_t every_ns, size_t budget)
{
	struct proctable *pt = in->pt;

	/* Downwards, as the sweep: an exit moves the last entry into the
	 * freed slot, and a pass that ends starts over at the next step. */
	if (!in->rss_at || in->rss_at > pt->n)
		in->rss_at = pt->n;
	for (; in->rss_at > 0 && budget > 0; budget--) {
		struct proc *p = pt->all[--in->rss_at];

		if (rss_due(p, mono_ns, every_ns))
			ask_rss(in, p, mono_ns);
		ingest_recheck_workload(in, p, mono_ns); /* the same walk, its own pace */
	}
}

void ingest_rss_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req, int err,
		      uint64_t bytes)
{
	struct proc *p = proctable_find_live(in->pt, pid);

	if (err || !p || p->start_time != start_time || p->rss_req != req)
		return; /* gone (its exit comes), exec'ed or asked again since */
	/* Dated when asked: the read follows within a worker's queue. */
	if (proctable_add_rss(p, ingest_realtime(in, p->rss_asked_mono_ns), bytes))
		log_debug("rss: pid %u: no memory for a point", pid);
}
