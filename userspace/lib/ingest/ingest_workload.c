/* ingest_workload: each process's workload (identity.h), read on the
 * worker and kept in its proctable entry.  Read whole (argv and cgroup)
 * when a process is new, forks or execs; its cgroup alone again now and
 * then, since managers move processes (systemd-run --scope, a runtime's
 * exec into a container, a kubelet restarting a pod) without an exec.
 * The recheck rides on the RSS pass: a bounded step of the table per
 * tick, and only for processes sampled since their last check, so an
 * idle machine of 10,000 processes reads nothing and a busy one reads a
 * few hundred bytes per active process every WID_RECHECK_NS. */
#include "ingest.h"
#include "ingest_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "identity.h"

/* A process moved between cgroups shows its new unit or container
 * within this long once it runs; its samples before are named by the
 * old one (profiles are per process, not per cgroup). */
#define WID_RECHECK_NS (5ull * 1000000000ull)

static void ask(struct ingest *in, struct proc *p, uint64_t mono_ns, bool cgroup_only)
{
	struct workload_id *wid;
	int err;

	p->wid_asked_mono_ns = mono_ns;
	p->wid_activity = p->samples + p->events;
	p->wid_req++;
	if (in->be.workload) {
		in->be.workload(in->be.ctx, p->pid, p->start_time, p->wid_req, cgroup_only);
		return;
	}
	wid = calloc(1, sizeof(*wid));
	err = wid ? identity_read(in->pt->proc_root, p->pid, NULL, NULL, wid) : -ENOMEM;
	ingest_workload_found(in, p->pid, p->start_time, p->wid_req, err, false, wid);
}

void ingest_ask_workload(struct ingest *in, struct proc *p, uint64_t mono_ns)
{
	ask(in, p, mono_ns, false);
}

void ingest_recheck_workload(struct ingest *in, struct proc *p, uint64_t mono_ns)
{
	if (p->exited || !p->start_time)
		return;
	if (!p->wid) { /* made without a request (no start time known), or lost */
		if (!p->wid_asked_mono_ns || mono_ns - p->wid_asked_mono_ns >= WID_RECHECK_NS)
			ask(in, p, mono_ns, false);
		return;
	}
	if (p->samples + p->events != p->wid_activity &&
	    mono_ns - p->wid_asked_mono_ns >= WID_RECHECK_NS)
		ask(in, p, mono_ns, true);
}

void ingest_inherit_workload(struct proc *p, const struct proc *parent)
{
	struct workload_id *wid;

	if (p->wid || !parent->wid || !(wid = malloc(sizeof(*wid))))
		return;
	*wid = *parent->wid;
	proctable_set_workload(p, wid);
}

/* A rank's parent heads its job: kept after it exits (proctable.h). */
static void mark_launcher(struct ingest *in, const struct proc *p)
{
	struct proc *parent = p->ppid ? proctable_find_pid(in->pt, p->ppid) : NULL;

	if (parent && parent->start_time <= p->start_time)
		parent->heads_job = true;
}

void ingest_workload_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req,
			   int err, bool cgroup_only, struct workload_id *wid)
{
	struct proc *p = proctable_find_live(in->pt, pid);

	if (err || !wid || !p || p->start_time != start_time || p->wid_req != req) {
		free(wid); /* gone (its exit comes), exec'ed or asked again since */
		return;
	}
	in->c.workloads++;
	if (cgroup_only && p->wid) { /* what its argv and environment said at exec */
		memcpy(wid->script, p->wid->script, sizeof(wid->script));
		wid->job = p->wid->job;
	}
	identity_derive(wid, p->comm, p->exe ? p->exe : "");
	if (wid->job.rank[0])
		mark_launcher(in, p);
	proctable_set_workload(p, wid);
}
