/* control.c: what the daemon answers on its control socket (list, dump,
 * stacks; stats in control_stats.c, workloads in control_workload.c).  Each answer is built into a buffer
 * that the control thread (control_server.c) sends without blocking.
 * The profile state is read under d->lock for as short as it takes to
 * copy it; history is queried under its own lock, so a long query never
 * stops ingest.
 * SO_PEERCRED decides what a caller may see: root everything, anyone
 * else only processes running under its own uid. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "array.h"
#include "buf.h"
#include "hashmap.h"
#include "daemon.h"
#include "control.h"
#include "memread.h"
#include "statelock.h"
#include "log.h"
#include "protocol.h"
#include "sockperm.h"
#include "tlset.h"


/* Kernel frames for a caller who is not root, as perf would allow them:
 * perf_event_paranoid <= 1 lets an unprivileged user see kernel stacks. */
static bool may_see_kernel(const struct caller *c)
{
	char text[16] = "";
	FILE *f;
	int level = 2;

	if (c->uid == 0)
		return true;
	f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (f) {
		if (fgets(text, sizeof(text), f))
			level = atoi(text);
		fclose(f);
	}
	return level <= 1;
}

static bool may_see(const struct caller *c, const struct proc *p)
{
	return c->uid == 0 || p->uid == c->uid;
}

/* Anything to show: CPU samples or other profile types. */
static bool has_data(const struct proc *p)
{
	return p->samples || p->events;
}

/* A whole response message: header, then the payload. */
static int respond(struct buf *out, uint16_t type, const struct buf *payload)
{
	if (payload->failed)
		return -ENOMEM;
	if (payload->len > PROTO_MAX_RESPONSE)
		return -EMSGSIZE;
	buf_reset(out);
	proto_put_header(out, type, (uint32_t)payload->len);
	buf_append(out, payload->data, payload->len);
	return out->failed ? -ENOMEM : 0;
}

static int reply_error(struct buf *out, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int reply_error(struct buf *out, int code, const char *fmt, ...)
{
	struct buf b;
	char msg[512];
	va_list ap;
	int err;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	buf_init(&b);
	proto_encode_error(&b, code, msg);
	err = respond(out, PROTO_RESP_ERROR, &b);
	buf_free(&b);
	return err;
}

/* The wall profile is not stored: it is the cpu profile, each sample
 * counted as the sampling period in ns, plus the off-cpu profile. */
static uint64_t wall_cpu_scale(const struct daemon *d)
{
	return daemon_sample_ns(d);
}

struct list_ctx {
	struct proto_list *l;
	size_t cap;
	const struct caller *c;
	struct hashmap seen; /* hash(pid, start_time) of processes listed */
	uint64_t cpu_ns;     /* a CPU sample as wall time */
	const char *proc_root;
};

/* A process to list, as memory or history knows it.  Strings are
 * borrowed: history's live only during its callback. */
struct list_item {
	uint32_t pid, ppid, uid, flags;
	uint64_t start_time, exit_ns;
	const char *comm, *exe;
	const char *ident[PROTO_IDENT_N]; /* NULL: unknown */
	uint64_t w[AGG_TYPE_MAX]; /* weights by enum agg_type */
};

static int copy_ident(struct proto_proc *e, const struct list_item *it)
{
	int i;

	for (i = 0; i < PROTO_IDENT_N; i++)
		if (it->ident[i] && it->ident[i][0] && !(e->ident[i] = strdup(it->ident[i])))
			return -ENOMEM;
	return 0;
}

static uint64_t proc_key(uint32_t pid, uint64_t start_time)
{
	return hash64_mix((uint64_t)pid << 32 ^ start_time);
}

/* Every profile type, in enum agg_type order: the order of each listed
 * process's totals. */
static int list_types(struct proto_list *l)
{
	int t;

	l->types = calloc(AGG_TYPE_MAX, sizeof(*l->types));
	if (!l->types)
		return -ENOMEM;
	for (t = 0; t < AGG_TYPE_MAX; t++) {
		struct proto_list_type *pt = &l->types[l->ntypes++];

		pt->name = strdup(aggregate_type_name(t));
		pt->unit = strdup(aggregate_type_unit(t));
		if (!pt->name || !pt->unit)
			return -ENOMEM;
	}
	return 0;
}

/* Wall is composed here as a dump composes it: stored by neither. */
static int list_add(struct list_ctx *x, struct list_item *it)
{
	struct proto_proc *e;
	int t;

	if (hashmap_get(&x->seen, proc_key(it->pid, it->start_time), NULL))
		return 0;
	if (array_grow((void **)&x->l->procs, &x->cap, x->l->n + 1, sizeof(*e)) ||
	    hashmap_put(&x->seen, proc_key(it->pid, it->start_time), 1))
		return -ENOMEM;
	it->w[AGG_WALL] = it->w[AGG_CPU] * x->cpu_ns + it->w[AGG_OFFCPU];
	e = &x->l->procs[x->l->n];
	*e = (struct proto_proc){ .pid = it->pid, .ppid = it->ppid, .uid = it->uid,
				  .flags = it->flags,
				  .start_time = it->start_time, .exit_ns = it->exit_ns,
				  .samples = it->w[AGG_CPU], .ntotals = AGG_TYPE_MAX };
	e->comm = strdup(it->comm ? it->comm : "");
	e->exe = strdup(it->exe ? it->exe : "");
	e->totals = malloc(sizeof(it->w));
	if (!e->comm || !e->exe || !e->totals || copy_ident(e, it)) {
		free(e->comm);
		free(e->exe);
		free(e->totals);
		for (t = 0; t < PROTO_IDENT_N; t++)
			free(e->ident[t]);
		memset(e, 0, sizeof(*e));
		return -ENOMEM;
	}
	memcpy(e->totals, it->w, sizeof(it->w));
	x->l->n++;
	return 0;
}

/* p's RSS points, copied under the lock. */
static int list_rss_history(struct proto_proc *e, const struct proc *p)
{
	uint32_t i;

	if (!p->rss || !p->rss->n)
		return 0;
	e->rss_history = malloc(2 * p->rss->n * sizeof(*e->rss_history));
	if (!e->rss_history)
		return -ENOMEM;
	for (i = 0; i < p->rss->n; i++)
		proctable_rss_point(p, i, &e->rss_history[2 * i], &e->rss_history[2 * i + 1]);
	e->nrss = p->rss->n;
	return 0;
}

/* A process in memory, with its points. */
static int list_memory_proc(struct list_ctx *x, const struct proc *p)
{
	struct list_item it = { .pid = p->pid, .ppid = p->ppid, .uid = p->uid,
				.start_time = p->start_time, .comm = p->comm, .exe = p->exe };
	size_t n = x->l->n;
	int t, err;

	if (p->exited) {
		it.flags = PROTO_PROC_EXITED;
		it.exit_ns = p->exit_ns;
	}
	for (t = 0; t < PROTO_IDENT_N; t++)
		it.ident[t] = control_wid_ident(p->wid, t);
	for (t = 0; t < AGG_TYPE_MAX; t++)
		it.w[t] = aggregate_total(p, t);
	err = list_add(x, &it);
	return err || x->l->n == n ? err : list_rss_history(&x->l->procs[n], p);
}

/* Live processes' resident sets, read after the locks are let go (a read
 * of /proc each, bounded by the table's size) and only when the pid still
 * names the same process. */
static void list_rss(const struct daemon *d, struct proto_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		struct proto_proc *e = &l->procs[i];

		if (!(e->flags & PROTO_PROC_EXITED) &&
		    proc_read_rss(d->pt.proc_root, e->pid, e->start_time, &e->rss_bytes))
			e->rss_bytes = 0;
	}
}

/* Listed from memory already, or not the caller's: history's figures
 * for it (a sum over all its rows) are not read. */
static bool list_history_skip(const struct history_proc *hp, void *ctx)
{
	struct list_ctx *x = ctx;

	return (x->c->uid != 0 && hp->uid != x->c->uid) ||
	       hashmap_get(&x->seen, proc_key(hp->pid, hp->start_time), NULL);
}

/* A history row with no exit was alive when it was last written: the
 * daemon that wrote it may have stopped before the process ended, and
 * this one has not seen it since.  Running only if its pid still names
 * it (same start time); else ended, when is unknown: its last event. */
static void settle_exit(const struct list_ctx *x, const struct history_proc *hp,
			struct list_item *it)
{
	uint64_t rss;

	if (hp->exited_ns || !hp->start_time ||
	    proc_read_rss(x->proc_root, hp->pid, hp->start_time, &rss) != -ESRCH)
		return;
	it->flags |= PROTO_PROC_EXITED;
	it->exit_ns = hp->last_ns ? hp->last_ns : hp->first_ns ? hp->first_ns : 1;
}

/* Processes only history remembers (from before a restart, or evicted
 * from memory): its weights are stored per type by name. */
static int list_history_proc(const struct history_proc *hp, void *ctx)
{
	struct list_ctx *x = ctx;
	struct list_item it = { .pid = hp->pid, .ppid = hp->ppid, .uid = hp->uid,
				.flags = hp->exited_ns ? PROTO_PROC_EXITED : 0,
				.start_time = hp->start_time, .exit_ns = hp->exited_ns,
				.comm = hp->comm, .exe = hp->exe };
	struct proto_proc *e;
	size_t n = x->l->n;
	uint32_t i;
	int t, err;

	for (i = 0; i < hp->ntotals; i++)
		if ((t = aggregate_type_from_name(hp->totals[i].type)) >= 0)
			it.w[t] += hp->totals[i].count;
	control_history_ident(hp, it.ident);
	settle_exit(x, hp, &it);
	err = list_add(x, &it);
	if (err || x->l->n == n || !hp->nrss)
		return err;
	e = &x->l->procs[n];
	e->rss_history = malloc(2 * hp->nrss * sizeof(*e->rss_history));
	if (!e->rss_history)
		return -ENOMEM;
	memcpy(e->rss_history, hp->rss, 2 * hp->nrss * sizeof(*e->rss_history));
	e->nrss = hp->nrss;
	return 0;
}

/* The ancestors of the ranks of a job, sampled or not: a launcher
 * (mpirun, torchrun) mostly waits, and profctl jobs names a job by it.
 * A parent that started after its child is a reused pid: not it. */
#define LIST_JOB_GENERATIONS 4
static int list_launchers(struct daemon *d, struct list_ctx *x)
{
	size_t i, from = 0, gen;
	int err = 0;

	for (gen = 0; gen < LIST_JOB_GENERATIONS && !err; gen++) {
		size_t n = x->l->n;

		for (i = from; i < n && !err; i++) {
			const struct proto_proc *e = &x->l->procs[i];
			struct proc *q;

			if (!e->ppid || (!gen && !e->ident[PROTO_IDENT_RANK]))
				continue;
			q = proctable_find_pid(&d->pt, e->ppid);
			if (q && may_see(x->c, q) && q->start_time <= e->start_time)
				err = list_memory_proc(x, q); /* once: list_add skips the seen */
		}
		from = n;
	}
	return err;
}

static int handle_list(struct daemon *d, struct buf *out, const struct caller *c)
{
	struct proto_list l = { 0 };
	struct list_ctx x = { .l = &l, .c = c, .cpu_ns = wall_cpu_scale(d),
			      .proc_root = d->pt.proc_root };
	uint64_t retention;
	struct buf b;
	const struct proc *p;
	size_t it = 0;
	int err = list_types(&l);

	l.rate_hz = daemon_rate_hz(d);
	l.comm_traced = d->cfg.comm;
	pthread_mutex_lock(&d->hist_lock);
	daemon_lock_other(d);
	while (!err && (p = proctable_next(&d->pt, &it)))
		if (may_see(c, p) && has_data(p))
			err = list_memory_proc(&x, p);
	if (!err)
		err = list_launchers(d, &x);
	retention = d->cfg.retention_ns;
	daemon_unlock(d);
	if (!err && d->hist)
		err = history_procs(d->hist, clock_realtime_ns() - retention, list_history_skip,
				    list_history_proc, &x);
	pthread_mutex_unlock(&d->hist_lock);
	if (!err)
		list_rss(d, &l);
	buf_init(&b);
	if (!err)
		err = proto_encode_list(&b, &l);
	err = err ? reply_error(out, -err, "listing failed: %s", strerror(-err))
		  : respond(out, PROTO_RESP_LIST, &b);
	buf_free(&b);
	proto_list_free(&l); /* frees the copied strings too */
	hashmap_free(&x.seen);
	return err;
}

static int handle_stats(struct daemon *d, struct buf *out)
{
	struct buf b;
	int err;

	buf_init(&b);
	err = control_stats_payload(d, &b);
	if (!err)
		err = respond(out, PROTO_RESP_STATS, &b);
	buf_free(&b);
	return err;
}

/* The process a dump of pid means: the live one, else the latest exited. */
static struct proc *find_for_dump(struct daemon *d, uint32_t pid)
{
	struct proc *best = proctable_find_live(&d->pt, pid), *p;
	size_t it = 0;

	if (best)
		return best;
	while ((p = proctable_next(&d->pt, &it))) {
		if (p->pid == pid && has_data(p) && (!best || p->exit_ns > best->exit_ns))
			best = p;
	}
	return best;
}

static int explain_missing(struct buf *out, uint32_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u", pid);
	if (access(path, F_OK))
		return reply_error(out, ESRCH, "no such process: %u (not running, and no profile kept)",
				   pid);
	return reply_error(out, ENODATA,
			   "process %u has no samples yet (idle, just started, or not selected "
			   "by profd --pid)",
			   pid);
}

static void set_meta(struct stackset *ss, const struct proto_dump_req *r, struct proc **sel,
		     size_t nsel, uint32_t rate)
{
	size_t i;

	control_workload_meta(ss, sel, nsel, !(r->flags & PROTO_DUMP_ALL));
	ss->rate_hz = rate;
	ss->start_ns = r->since_ns;
	ss->end_ns = r->until_ns;
	for (i = 0; i < nsel; i++) {
		if (!r->since_ns && (!ss->start_ns || sel[i]->first_ns < ss->start_ns))
			ss->start_ns = sel[i]->first_ns;
		if (!r->until_ns && sel[i]->last_ns > ss->end_ns)
			ss->end_ns = sel[i]->last_ns;
	}
}

static bool selected_already(struct proc **sel, size_t n, const struct proc *p)
{
	while (n--)
		if (sel[n] == p)
			return true;
	return false;
}

/* --exe matches the full path or the file name. */
static bool exe_matches(const struct proc *p, const char *exe)
{
	const char *base;

	if (!p->exe)
		return false;
	base = strrchr(p->exe, '/');
	return !strcmp(p->exe, exe) || (base && !strcmp(base + 1, exe));
}

static bool by_selector(const struct proto_dump_req *r)
{
	return r->comm || r->exe || r->service || r->unit || r->container || r->cgroup;
}

static bool matches(const struct proto_dump_req *r, const struct proc *p)
{
	if (r->flags & PROTO_DUMP_ALL)
		return true;
	if (r->comm && strcmp(p->comm, r->comm) == 0)
		return true;
	if (r->exe && exe_matches(p, r->exe))
		return true;
	return control_workload_matches(r, p->wid);
}

/* --subprocesses: every process descended from the ancestors in anc (pid
 * -> start time), by parent pid and a start no earlier than the parent's,
 * added to sel when the caller may see it and it has samples.  One pass
 * over the table per generation, so a deep tree costs its depth in passes. */
static size_t add_descendants(struct daemon *d, const struct caller *c, struct hashmap *anc,
			      struct proc **sel, size_t n)
{
	bool grew = true;
	uint64_t pstart;
	struct proc *q;
	size_t it;

	while (grew) {
		grew = false;
		for (it = 0; (q = proctable_next(&d->pt, &it));) {
			if (!q->ppid || hashmap_get(anc, q->pid, NULL) ||
			    !hashmap_get(anc, q->ppid, &pstart) || q->start_time < pstart ||
			    hashmap_put(anc, q->pid, q->start_time))
				continue;
			grew = true;
			if (may_see(c, q) && has_data(q) && !selected_already(sel, n, q))
				sel[n++] = q;
		}
	}
	return n;
}

/* Which processes a dump covers; replies with an error itself when one is
 * missing or not the caller's.  Returns the count, or -1 after replying. */
static ssize_t select_procs(struct daemon *d, struct buf *out, const struct caller *c,
			    const struct proto_dump_req *r, struct proc **sel, uint32_t *hist_pids,
			    size_t *nhist, struct hashmap *anc)
{
	size_t n = 0, i, it;
	struct proc *p;

	if ((r->flags & PROTO_DUMP_ALL) || by_selector(r)) {
		for (it = 0; (p = proctable_next(&d->pt, &it));)
			if (may_see(c, p) && has_data(p) && matches(r, p))
				sel[n++] = p;
		/* A workload's exited processes may be in history: the
		 * error waits for it (build_dump). */
		if (!n && !r->npids && !(r->flags & PROTO_DUMP_ALL) &&
		    !(d->hist && control_by_workload(r))) {
			char what[512];

			control_describe_selectors(r, what, sizeof(what));
			reply_error(out, ENOENT, "no process with samples matches %s", what);
			return -1;
		}
		if (!r->npids)
			return (ssize_t)n;
	}
	for (i = 0; i < r->npids; i++) {
		struct proc *p = find_for_dump(d, r->pids[i]);

		if (p && !has_data(p) && (r->flags & PROTO_DUMP_SUBPROCESSES) && may_see(c, p)) {
			hashmap_put(anc, p->pid, p->start_time); /* a parent that only waits */
			continue;
		}
		if (!p || !has_data(p)) {
			if (d->hist) { /* maybe from before a restart */
				hist_pids[(*nhist)++] = r->pids[i];
				continue;
			}
			explain_missing(out, r->pids[i]);
			return -1;
		}
		if (!may_see(c, p)) {
			reply_error(out, EACCES, "permission denied: process %u belongs to uid %u",
				    p->pid, p->uid);
			return -1;
		}
		if (!selected_already(sel, n, p))
			sel[n++] = p;
		hashmap_put(anc, p->pid, p->start_time);
	}
	if (r->flags & PROTO_DUMP_SUBPROCESSES)
		n = add_descendants(d, c, anc, sel, n);
	if (!n && !*nhist && r->npids) {
		explain_missing(out, r->pids[0]);
		return -1;
	}
	return (ssize_t)n;
}

/* What a dump covers, copied under d->lock so that history is read after
 * it is let go (a process may expire meanwhile). */
struct dump_plan {
	struct proc **sel;   /* valid only under d->lock */
	size_t nsel;
	uint32_t *pids;      /* the selection's identities */
	uint64_t *starts;
	uint32_t *hist_pids; /* asked for, known only to history */
	size_t nhist;
	/* Selected by workload from history (exited before a restart, or
	 * evicted from memory): each one instance. */
	struct control_wl_sel wl;
	struct agg_query q;
};

/* The flushed part of the selection from history (memory adds the rest
 * with AGG_UNFLUSHED): per process, or all at once for --all. */
static int dump_history(struct daemon *d, const struct caller *c, const struct proto_dump_req *r,
			const struct dump_plan *dp, struct stackset *ss)
{
	struct history_query hq = {
		.since_ns = r->since_ns, .until_ns = r->until_ns,
		.by_thread = dp->q.flags & AGG_BY_THREAD,
		.python_only = dp->q.flags & VIEW_PYTHON_ONLY,
		.process_root = dp->q.flags & AGG_PROCESS_ROOT,
		.no_kernel = dp->q.flags & VIEW_NO_KERNEL,
		.by_task = dp->q.flags & VIEW_BY_TASK,
		.type = aggregate_type_name(dp->q.type),
		.scale = dp->q.scale,
		.by_uid = c->uid != 0, .uid = c->uid,
	};
	size_t i;
	int err = 0;

	if (dp->q.type == AGG_WALL) {
		struct dump_plan part = *dp;

		part.q.type = AGG_CPU;
		part.q.scale = wall_cpu_scale(d);
		err = dump_history(d, c, r, &part, ss);
		part.q.type = AGG_OFFCPU;
		part.q.scale = 0;
		return err ? err : dump_history(d, c, r, &part, ss);
	}
	if (r->flags & PROTO_DUMP_ALL)
		return history_query(d->hist, &hq, ss);
	for (i = 0; i < dp->nsel && !err; i++) {
		hq.pids = &dp->pids[i];
		hq.start_times = &dp->starts[i];
		hq.npids = 1;
		err = history_query(d->hist, &hq, ss);
	}
	for (i = 0; i < dp->wl.n && !err; i++) {
		hq.pids = &dp->wl.pids[i];
		hq.start_times = &dp->wl.starts[i];
		hq.npids = 1;
		err = history_query(d->hist, &hq, ss);
	}
	if (!err && dp->nhist) {
		hq.pids = dp->hist_pids; /* not in memory: every instance history has */
		hq.start_times = NULL;
		hq.npids = dp->nhist;
		err = history_query(d->hist, &hq, ss);
	}
	return err;
}

/* Blocks still under way are read thread by thread from /proc and BPF
 * on the ingest thread: only for a dump of a few processes. */
#define ONGOING_MAX_PROCS 16

/* One process's profile in memory; wall from its two parts. */
static int dump_proc_memory(struct daemon *d, struct proc *p, const struct agg_query *q,
			    struct stackset *ss)
{
	struct agg_query part = *q;
	int err;

	if (q->type != AGG_WALL)
		return aggregate_dump(&d->agg, p, q, ss);
	part.type = AGG_CPU;
	part.scale = wall_cpu_scale(d);
	err = aggregate_dump(&d->agg, p, &part, ss);
	part.type = AGG_OFFCPU;
	part.scale = 0;
	return err ? err : aggregate_dump(&d->agg, p, &part, ss);
}

struct ongoing_job {
	const struct dump_plan *dp;
	struct agg_query q; /* off-cpu */
	struct stackset *ss;
};

/* On the ingest thread: the selection's processes found again by pid and
 * start time (the lock was let go since), their blocks under way added. */
static int ongoing_job(struct daemon *d, void *arg)
{
	struct ongoing_job *j = arg;
	size_t i;
	int err = 0;

	for (i = 0; i < j->dp->nsel && !err; i++) {
		struct proc *p = proctable_find_live(&d->pt, j->dp->pids[i]);

		if (p && p->start_time == j->dp->starts[i])
			err = control_ongoing_blocks(d, p, &j->q, j->ss);
	}
	return err;
}

/* Off-cpu and wall dumps of a few live processes: what threads blocked
 * now have waited so far. */
static int dump_ongoing(struct daemon *d, const struct dump_plan *dp, struct stackset *ss)
{
	struct ongoing_job j = { .dp = dp, .q = dp->q, .ss = ss };

	if ((dp->q.type != AGG_OFFCPU && dp->q.type != AGG_WALL) || !d->cfg.offcpu ||
	    dp->nsel > ONGOING_MAX_PROCS || !dp->nsel)
		return 0;
	j.q.type = AGG_OFFCPU;
	j.q.scale = 0;
	return daemon_on_ingest(d, ongoing_job, &j);
}

/* Under d->lock: the selection's profiles in memory, and its identities. */
static int dump_memory(struct daemon *d, const struct proto_dump_req *r, struct dump_plan *dp,
		       struct stackset *ss)
{
	size_t i;
	int err = 0;

	if (r->flags & PROTO_DUMP_BY_THREAD)
		dp->q.flags |= AGG_BY_THREAD;
	if (r->flags & PROTO_DUMP_PYTHON_ONLY)
		dp->q.flags |= VIEW_PYTHON_ONLY;
	if (r->flags & PROTO_DUMP_BY_TASK)
		dp->q.flags |= VIEW_BY_TASK;
	if (dp->nsel + dp->nhist > 1 || (r->flags & (PROTO_DUMP_ALL | PROTO_DUMP_SUBPROCESSES)) ||
	    by_selector(r))
		dp->q.flags |= AGG_PROCESS_ROOT;
	if (d->hist)
		dp->q.flags |= AGG_UNFLUSHED;
	dp->pids = calloc(dp->nsel + 1, sizeof(*dp->pids));
	dp->starts = calloc(dp->nsel + 1, sizeof(*dp->starts));
	if (!dp->pids || !dp->starts)
		return -ENOMEM;
	for (i = 0; i < dp->nsel && !err; i++) {
		dp->pids[i] = dp->sel[i]->pid;
		dp->starts[i] = dp->sel[i]->start_time;
		err = dump_proc_memory(d, dp->sel[i], &dp->q, ss);
	}
	set_meta(ss, r, dp->sel, dp->nsel, d->cfg.rate_hz);
	return err;
}

static int check_dump_req(struct buf *out, const struct proto_dump_req *r, int *type)
{
	if (r->flags & ~PROTO_DUMP_KNOWN_FLAGS)
		return reply_error(out, EOPNOTSUPP, "dump flags 0x%x not understood: upgrade profd",
				   r->flags & ~PROTO_DUMP_KNOWN_FLAGS) ?: 1;
	*type = r->type ? aggregate_type_from_name(r->type) : AGG_CPU;
	if (*type < 0)
		return reply_error(out, EINVAL, "unknown profile type '%s' (known: %s)", r->type,
				   aggregate_type_names()) ?: 1;
	if (!r->npids && !by_selector(r) && !(r->flags & PROTO_DUMP_ALL))
		return reply_error(out, EINVAL,
				   "no process selected: give --pid, --comm, --exe, --service, "
				   "--unit, --container, --cgroup or --all") ?: 1;
	return 0;
}

/* A dump waits this long at most for ingest to read the rings. */
#define DUMP_CATCH_UP_MS 200

/* build_dump's end for a timeline: 0 when there is one to send, 1 when
 * answered already (an error). */
static int timeline_answer(struct buf *out, int err, ssize_t nsel, const struct dump_plan *dp,
			   const struct tlset *tl)
{
	if (err)
		return reply_error(out, -err, "timeline failed: %s", strerror(-err)) ?: 1;
	if (nsel < 0)
		return 1;
	/* Asked for only processes memory does not hold: say what a dump says. */
	if (!nsel && dp->nhist)
		return explain_missing(out, dp->hist_pids[0]) ?: 1;
	if (!tl->nevents)
		return reply_error(out, ENODATA, "no timeline kept for the selection (its events "
						 "are past profd's bound, or from before a restart)") ?: 1;
	return 0;
}

/* Under d->lock: a timeline's processes by pid, for their Python thread
 * names (read after the lock is let go). */
static int timeline_pids(struct dump_plan *dp)
{
	size_t i;

	dp->pids = calloc(dp->nsel + 1, sizeof(*dp->pids));
	if (!dp->pids)
		return -ENOMEM;
	for (i = 0; i < dp->nsel; i++)
		dp->pids[i] = dp->sel[i]->pid;
	return 0;
}

/* Selection and memory under both locks, history under its own, the
 * encoding under none. */
static int build_dump(struct daemon *d, struct buf *out, const struct caller *c,
		      const struct proto_dump_req *r, struct dump_plan *dp, struct stackset *ss,
		      struct tlset *tl)
{
	struct hashmap anc; /* --subprocesses: pid -> start time of ancestors */
	ssize_t nsel;
	int err = 0;

	daemon_catch_up(d, DUMP_CATCH_UP_MS); /* what was sampled until now */
	pthread_mutex_lock(&d->hist_lock);
	daemon_lock_other(d);
	dp->sel = calloc(2 * proctable_count(&d->pt) + r->npids + 1, sizeof(*dp->sel));
	dp->hist_pids = calloc(r->npids + 1, sizeof(*dp->hist_pids));
	if (!dp->sel || !dp->hist_pids)
		err = -ENOMEM;
	hashmap_init(&anc);
	nsel = err ? -1 : select_procs(d, out, c, r, dp->sel, dp->hist_pids, &dp->nhist, &anc);
	hashmap_free(&anc);
	if (nsel >= 0) {
		dp->nsel = (size_t)nsel;
		/* A timeline is memory only: no blocks under way, no history. */
		err = tl ? control_timeline_collect(d, dp->sel, dp->nsel, &dp->q, tl)
			 : dump_memory(d, r, dp, ss);
		if (!err && tl)
			err = timeline_pids(dp);
	}
	daemon_unlock(d);
	if (tl) {
		pthread_mutex_unlock(&d->hist_lock);
		/* Read from the processes' memory: with no lock held. */
		if (!err && nsel > 0)
			err = control_python_thread_tracks(dp->pids, dp->nsel, tl);
		return timeline_answer(out, err, nsel, dp, tl);
	}
	if (!err && nsel >= 0)
		err = dump_ongoing(d, dp, ss);
	if (!err && nsel >= 0)
		err = control_workload_history(d, c->uid, r, dp->pids, dp->starts, dp->nsel,
					       &dp->wl);
	if (!err && nsel >= 0 && d->hist)
		err = dump_history(d, c, r, dp, ss);
	pthread_mutex_unlock(&d->hist_lock);
	/* Read from the processes' memory: with no lock held. */
	if (!err && nsel >= 0 && (dp->q.flags & AGG_BY_THREAD))
		err = control_python_thread_roots(dp->pids, dp->nsel,
						  dp->q.flags & AGG_PROCESS_ROOT, ss);
	if (err)
		return reply_error(out, -err, "building the profile failed: %s", strerror(-err));
	if (nsel < 0)
		return 1; /* answered already */
	if (!dp->nsel && !dp->wl.n && !r->npids && control_by_workload(r) && !(r->flags & PROTO_DUMP_ALL)) {
		char what[512];

		control_describe_selectors(r, what, sizeof(what));
		return reply_error(out, ENOENT, "no process with samples matches %s", what) ?: 1;
	}
	if (!dp->nsel && dp->wl.n) /* all of it from before a restart */
		control_history_title(ss, r, dp->wl.n);
	if (!ss->total && dp->nhist && !dp->nsel)
		return explain_missing(out, dp->hist_pids[0]) ?: 1;
	return 0;
}

/* A dump's selection, answered with its timeline instead of a profile. */
static int handle_timeline(struct daemon *d, struct buf *out, const struct caller *c,
			   const struct proto_dump_req *r, struct dump_plan *dp)
{
	struct tlset *tl = tlset_new();
	struct buf b;
	int err;

	if (!tl)
		return reply_error(out, ENOMEM, "out of memory");
	if (r->flags & PROTO_DUMP_PYTHON_ONLY)
		dp->q.flags |= VIEW_PYTHON_ONLY;
	err = build_dump(d, out, c, r, dp, NULL, tl);
	buf_init(&b);
	if (!err)
		err = control_timeline_encode(tl, &b);
	if (err < 0)
		err = reply_error(out, -err, "timeline failed: %s", strerror(-err)) ?: 1;
	if (!err)
		err = respond(out, PROTO_RESP_TIMELINE, &b);
	buf_free(&b);
	tlset_free(tl);
	return err;
}

static int handle_dump(struct daemon *d, struct buf *out, const struct caller *c,
		       const struct buf *payload)
{
	struct proto_dump_req r = { 0 };
	struct dump_plan dp = { 0 };
	struct stackset *ss = NULL;
	struct buf b;
	int err, type;

	if (proto_decode_dump_req(payload->data, payload->len, &r))
		return reply_error(out, EINVAL, "malformed dump request");
	err = check_dump_req(out, &r, &type);
	if (err)
		goto out;
	dp.q.type = type;
	dp.q.flags = may_see_kernel(c) ? 0 : VIEW_NO_KERNEL;
	dp.q.since_ns = r.since_ns;
	dp.q.until_ns = r.until_ns;
	if (r.flags & PROTO_DUMP_TIMELINE) {
		err = handle_timeline(d, out, c, &r, &dp);
		goto out;
	}
	ss = stackset_new();
	if (!ss) {
		err = reply_error(out, ENOMEM, "out of memory");
		goto out;
	}
	err = build_dump(d, out, c, &r, &dp, ss, NULL);
	if (err)
		goto out;
	stackset_set_str(&ss->type, aggregate_type_name(type));
	stackset_set_str(&ss->unit, aggregate_type_unit(type));
	buf_init(&b);
	err = proto_encode_stackset(&b, ss);
	if (!err)
		err = respond(out, PROTO_RESP_DUMP, &b);
	buf_free(&b);
out:
	stackset_free(ss);
	free(dp.sel);
	free(dp.pids);
	free(dp.starts);
	free(dp.hist_pids);
	free(dp.wl.pids);
	free(dp.wl.starts);
	proto_dump_req_free(&r);
	return err > 0 ? 0 : err;
}

/* The error a stacks request answers with; 1 when answered. */
static int stacks_error(struct buf *out, int err, const struct proto_dump_req *r)
{
	uint32_t pid = r->pids[0];

	if (err == -EACCES)
		return reply_error(out, EACCES, "permission denied: process %u is not yours", pid) ?: 1;
	if (err == -ESRCH)
		return reply_error(out, ESRCH, "no such process: %u", pid) ?: 1;
	if (err == -ENOENT && (r->flags & PROTO_STACKS_ASYNC))
		return reply_error(out, ENOENT, "process %u: no CPython, or it has not imported "
						"asyncio", pid) ?: 1;
	if (err == -ENOENT)
		return reply_error(out, ESRCH, "no such process: %u", pid) ?: 1;
	if (err == -EPROTONOSUPPORT)
		return reply_error(out, EPROTONOSUPPORT, "process %u: asyncio tasks need CPython "
							 "3.14 or later", pid) ?: 1;
	if (err == -ETIMEDOUT)
		return reply_error(out, ETIMEDOUT, "process %u: memory read timed out after %u ms "
						   "(its memory did not answer)",
				   pid, CONTROL_MEMREAD_TIMEOUT_MS) ?: 1;
	if (err == -EBUSY)
		return reply_error(out, EBUSY, "process %u: not read: %d reads of processes' "
					       "memory are stuck already; try again later",
				   pid, MEMREAD_MAX_STUCK) ?: 1;
	return reply_error(out, -err, "stacks failed: %s", strerror(-err)) ?: 1;
}

static int handle_stacks(struct daemon *d, struct buf *out, const struct caller *c,
			 const struct buf *payload)
{
	struct proto_dump_req r = { 0 };
	struct stackset *ss = NULL;
	struct buf b;
	int err;

	if (proto_decode_dump_req(payload->data, payload->len, &r))
		return reply_error(out, EINVAL, "malformed stacks request");
	/* An answered error is 1: nothing more to send. */
	if (r.npids != 1 || (r.flags & ~(PROTO_STACKS_ASYNC | PROTO_STACKS_LOCALS))) {
		err = reply_error(out, EINVAL, "stacks: give one --pid (flags 0x%x)", r.flags) ?: 1;
		goto out;
	}
	ss = stackset_new();
	if (!ss)
		err = -ENOMEM;
	else if (r.flags & PROTO_STACKS_ASYNC)
		err = control_async_tasks(d, r.pids[0], c->uid, ss);
	else
		err = control_thread_stacks(d, r.pids[0], c->uid, may_see_kernel(c),
					    r.flags & PROTO_STACKS_LOCALS, ss);
	if (err) {
		err = stacks_error(out, err, &r);
		goto out;
	}
	buf_init(&b);
	err = proto_encode_stackset(&b, ss);
	if (!err)
		err = respond(out, PROTO_RESP_STACKS, &b);
	buf_free(&b);
out:
	stackset_free(ss);
	proto_dump_req_free(&r);
	return err > 0 ? 0 : err;
}

void control_answer(struct daemon *d, const struct caller *c, uint16_t type,
		    const struct buf *payload, struct buf *out)
{
	int err;

	switch (type) {
	case PROTO_REQ_LIST: err = handle_list(d, out, c); break;
	case PROTO_REQ_STATS: err = handle_stats(d, out); break;
	case PROTO_REQ_DUMP: err = handle_dump(d, out, c, payload); break;
	case PROTO_REQ_STACKS: err = handle_stacks(d, out, c, payload); break;
	default: err = reply_error(out, EPROTO, "unknown request type %u", type);
	}
	if (err && !out->len)
		reply_error(out, -err, "request failed: %s", strerror(err < 0 ? -err : err));
}
