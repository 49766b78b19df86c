/* control_threads.c: what each thread of a process is doing now:
 * `profctl stacks` (every thread's current stack) and the blocks still
 * under way that off-cpu and wall dumps include up to now.
 *
 * With --off-cpu, from the per-thread state BPF keeps (offcpu.bpf.h): a
 * blocked thread's stack is the one walked when it blocked, a running
 * one's its latest CPU sample.  A thread with neither (profd runs without
 * --off-cpu, or the thread blocked before profd started and has not run
 * since) gets what control_pystack.c reads from the process on request:
 * its Python frames from the process's memory, its native frames when it
 * is blocked in the kernel (walked from the user pc and sp the kernel
 * shows of such a thread: control_native.c), and its kernel stack. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "control.h"
#include "statelock.h"
#include "ingest.h"
#include "sampler.h"

#define MAX_THREADS 65536

/* One thread as /proc and BPF describe it. */
struct thread_now {
	uint32_t tid;
	char name[PROFD_COMM_LEN + 1];
	char state;      /* /proc stat: R S D T t Z X I ... */
	char wait[64];   /* kernel wait channel, "" when running or unknown */
	bool have_pcount;
	uint32_t pcount; /* /proc schedstat: times it came on a CPU (low bits) */
	const char *source;
	const char *from; /* the header's last word: where the stack is from */
	const char *pyname; /* Python's name of it (threading), "" if none */
	char why[160];    /* storage for a source made up here */
	uint64_t age_ns; /* how old the stack is (blocked: how long) */
	bool blocked;    /* the stack is a switch-out's, still blocked */
	bool have;       /* a stack is known */
	struct profd_sample s;
};

/* Reads a small /proc file of the thread into text. */
static int read_task_file(uint32_t pid, uint32_t tid, const char *what, char *text, size_t size)
{
	char path[96];
	int n;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/%s", pid, tid, what);
	n = proc_read_small_file(path, text, size);
	return n < 0 ? n : 0;
}

/* schedstat's third figure (run time, run-queue wait, times run), where
 * the kernel keeps it (0 where it keeps the file but not the count). */
static void read_pcount(uint32_t pid, struct thread_now *t)
{
	char text[128];
	unsigned long long run, wait, count;

	t->have_pcount = !read_task_file(pid, t->tid, "schedstat", text, sizeof(text)) &&
			 sscanf(text, "%llu %llu %llu", &run, &wait, &count) == 3 && count;
	t->pcount = t->have_pcount ? (uint32_t)count : 0;
}

/* Name and state from stat ("tid (name) S ..."): the name may hold
 * anything, so the last ')' ends it. */
static int read_task(uint32_t pid, struct thread_now *t)
{
	char text[512], *open_, *close_;
	size_t len;

	/* schedstat first: a thread waking between the two reads then shows
	 * as back on a CPU (R) rather than sleeping with its sample. */
	read_pcount(pid, t);
	if (read_task_file(pid, t->tid, "stat", text, sizeof(text)))
		return -ESRCH;
	open_ = strchr(text, '(');
	close_ = strrchr(text, ')');
	if (!open_ || !close_ || close_ < open_ || close_[1] != ' ' || !close_[2])
		return -EPROTO;
	len = (size_t)(close_ - open_ - 1);
	if (len > PROFD_COMM_LEN)
		len = PROFD_COMM_LEN;
	memcpy(t->name, open_ + 1, len);
	t->name[len] = '\0';
	t->state = close_[2];
	if (t->state != 'R' && !read_task_file(pid, t->tid, "wchan", t->wait, sizeof(t->wait)) &&
	    !strcmp(t->wait, "0"))
		t->wait[0] = '\0';
	return 0;
}

/* Whether the thread is off CPU in the block that began at ts->off_ns
 * (blocked, or preempted and waiting for a CPU).  The BPF program keeps a
 * thread's last switch-out until something settles that block, which may
 * be after the thread is back: back it is if a sample has seen it run
 * since, or if the scheduler has put it on a CPU since (pcount moved).
 * Without schedstat, /proc's state says (R: running or runnable). */
static bool off_cpu_now(const struct thread_now *t, const struct profd_thread_state *ts)
{
	if (!ts->off_ns || ts->sample_ns > ts->off_ns)
		return false;
	return t->have_pcount ? t->pcount == ts->pcount_out : t->state != 'R';
}

/* What a thread off CPU is doing, and where its stack is from: /proc's R
 * is waiting for a CPU, preempted (switched out runnable: state 0) or
 * woken from a block it has not yet run after. */
static const char *off_source(const struct thread_now *t, const struct profd_thread_state *ts)
{
	if (!ts->captured)
		return t->state == 'R'
			       ? "waiting for a CPU: stack not walked (a storm, or the walk budget spent)"
			       : "blocked: stack not walked (a storm, or the walk budget spent)";
	if (t->state != 'R')
		return "blocked: stack when it blocked";
	return ts->state ? "woken, waiting for a CPU: stack when it blocked"
			 : "waiting for a CPU: stack when it was preempted";
}

/* Which stack says what the thread does now: its switch-out's while it is
 * off CPU, else its latest sample. */
static void pick_stack(struct daemon *d, uint32_t pid, struct thread_now *t, uint64_t now)
{
	struct profd_thread_state ts;
	bool off;

	t->source = "no stack seen: not run since profd started";
	t->from = "";
	if (sampler_thread_state(d->sampler, t->tid, &ts))
		return;
	off = off_cpu_now(t, &ts);
	if (off && ts.captured) {
		t->source = off_source(t, &ts);
		t->blocked = t->have = true;
		t->from = "switch-out";
		t->age_ns = now > ts.off_ns ? now - ts.off_ns : 0;
		ingest_sample_of(&t->s, pid, t->tid, ts.off_ns, ts.kstack_id, ts.ustack_id,
				 ts.pystack_id, ts.flags);
	} else if (!off && ts.sample_ns) {
		t->source = "running: latest CPU sample";
		t->from = "cpu-sample";
		t->have = true;
		t->age_ns = now > ts.sample_ns ? now - ts.sample_ns : 0;
		ingest_sample_of(&t->s, pid, t->tid, ts.sample_ns, ts.sample_kstack_id,
				 ts.sample_ustack_id, ts.sample_pystack_id, ts.sample_flags);
	} else if (off) {
		t->source = off_source(t, &ts);
		t->age_ns = now > ts.off_ns ? now - ts.off_ns : 0;
	}
}

/* Whether /proc and BPF may have seen the thread at different moments:
 * it came on a CPU after /proc was read (its stack then is newer than the
 * state shown), or /proc says it sleeps but BPF has no switch-out after
 * its latest sample (it is on its way off the CPU). */
static bool snapshot_torn(uint32_t pid, const struct thread_now *t)
{
	struct thread_now again = { .tid = t->tid };

	if (t->state != 'R' && !t->blocked && t->have)
		return true;
	if (!t->have_pcount)
		return false;
	read_pcount(pid, &again);
	return again.have_pcount && again.pcount != t->pcount;
}

/* /proc's state and BPF's stack of one thread, read until they agree (a
 * few tries: a thread switching all the time keeps its last reading). */
static int read_thread_now(struct daemon *d, uint32_t pid, struct thread_now *t)
{
	uint32_t tid = t->tid;
	int tries;

	for (tries = 0; tries < 3; tries++) {
		if (tries)
			sched_yield(); /* let a thread half way off its CPU finish */
		memset(t, 0, sizeof(*t));
		t->tid = tid;
		t->from = "";
		if (read_task(pid, t))
			return -ESRCH;
		if (!d->cfg.offcpu)
			return 0;
		pick_stack(d, pid, t, clock_mono_ns());
		if (!snapshot_torn(pid, t))
			return 0;
	}
	return 0;
}

/* Calls fn for each thread of pid (at most MAX_THREADS); 0 or -errno. */
static int each_thread(struct daemon *d, uint32_t pid,
		       int (*fn)(struct daemon *d, struct thread_now *t, void *arg), void *arg)
{
	char path[64];
	struct dirent *de;
	size_t n = 0;
	DIR *dir;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while (!err && n < MAX_THREADS && (de = readdir(dir))) {
		struct thread_now t = { 0 };
		char *end;

		t.tid = (uint32_t)strtoul(de->d_name, &end, 10);
		if (!isdigit((unsigned char)de->d_name[0]) || *end || read_thread_now(d, pid, &t))
			continue;
		err = fn(d, &t, arg);
		n++;
	}
	closedir(dir);
	return err;
}

struct ongoing {
	struct proc *p;
	const struct agg_query *q;
	struct stackset *out;
	uint32_t *ids;
};

static int add_ongoing(struct daemon *d, struct thread_now *t, void *arg)
{
	struct ongoing *o = arg;
	uint32_t n;
	int64_t idx;

	/* Blocked now; a thread waiting for a CPU is left out (its wait is
	 * short, and its event, runnable leaf and all, comes as it runs). */
	if (!t->blocked || t->state == 'R' || t->age_ns < d->cfg.offcpu_min_ns ||
	    ingest_thread_frames(&d->in, o->p, &t->s, true, false, o->ids, INGEST_MAX_FRAMES, &n))
		return 0;
	idx = aggregate_stack(&d->agg, o->p, o->ids, n);
	if (idx < 0)
		return 0;
	return aggregate_dump_stack(&d->agg, o->p, o->q, (uint32_t)idx, t->tid, t->name,
				    t->age_ns, o->out);
}

int control_ongoing_blocks(struct daemon *d, struct proc *p, const struct agg_query *q,
			   struct stackset *out)
{
	struct ongoing o = { .p = p, .q = q, .out = out };
	int err;

	DAEMON_CHECK_INGEST(d); /* names frames and stores the stack */
	if (!d->cfg.offcpu || p->exited || q->until_ns)
		return 0;
	o.ids = malloc(INGEST_MAX_FRAMES * sizeof(*o.ids));
	if (!o.ids)
		return -ENOMEM;
	err = each_thread(d, p->pid, add_ongoing, &o);
	free(o.ids);
	return err == -ENOENT || err == -ESRCH ? 0 : err;
}

/* ---- profctl stacks ---- */

struct listing {
	uint32_t pid, uid;
	struct proc *p;
	struct stackset *out;
	struct hashmap map; /* global frame id -> out's */
	uint32_t *ids, *out_ids;
	bool kernel;        /* the caller may see kernel frames */
	uint32_t max_frames; /* of a thread's stack in the reply */
	struct pynow now;   /* stacks read from the process just before */
};

#define LISTING_MAX_FRAMES (INGEST_MAX_FRAMES + 1)

static void no_tabs(char *s)
{
	for (; *s; s++)
		if (*s == '\t' || *s == '\n')
			*s = ' ';
}

/* The thread's header frame (protocol.h, PROTO_RESP_STACKS). */
static int64_t header_frame(struct stackset *out, struct thread_now *t)
{
	char text[512];

	no_tabs(t->name);
	no_tabs(t->wait);
	snprintf(text, sizeof(text), "%u\t%s\t%c\t%s\t%s\t%llu\t%s\t%s", t->tid, t->name,
		 t->state, t->wait, t->source, (unsigned long long)t->age_ns, t->from, t->pyname);
	return stackset_intern(out, FRAME_ROOT, text);
}

/* Where a blocked thread waits, from its switch-out's kernel frames or
 * those read now (leaf last), where /proc's wchan says nothing (it reads
 * 0 on x86 before 5.16 with the ORC unwinder: Debian 11's 5.10): the
 * first function under the scheduler's own. */
static void wait_from_frames(const struct stackset *dict, const uint32_t *ids, uint32_t n,
			     char *wait, size_t size)
{
	while (n && dict->frames[ids[n - 1]].kind == FRAME_WAIT) /* "[GIL wait]" on top */
		n--;
	while (n && dict->frames[ids[n - 1]].kind == FRAME_KERNEL) {
		const char *name = dict->frames[ids[--n]].name;
		size_t len = strlen(name);

		if (strstr(name, "schedule"))
			continue;
		if (len > 4 && !strcmp(name + len - 4, "_[k]"))
			len -= 4;
		snprintf(wait, size, "%.*s", (int)len, name);
		return;
	}
}

/* A thread BPF has no stack of: what was read from the process just
 * now, and the source that says so. */
static const struct pynow_thread *read_now(const struct listing *l, struct thread_now *t,
					   bool offcpu)
{
	const struct pynow_thread *now = pynow_find(&l->now, t->tid);
	bool running = t->state == 'R', native = now && now->nnat;

	if (now && now->npy)
		t->source = running ? "running: Python stack read now"
				    : "blocked: Python stack read now";
	else if (l->now.unread)
		t->source = l->now.unread;
	else if (native && now->tstate)
		t->source = "blocked: native stack read now (no Python frames)";
	else if (native)
		t->source = "blocked: native stack read now";
	else if (now && now->tstate)
		t->source = "read now: no Python frames (outside Python code)";
	else if (l->now.python && l->now.out_of_time)
		t->source = "not read: the 500 ms budget ran out";
	else if (l->now.python)
		t->source = "read now: no Python thread state (a native thread)";
	else if (!offcpu) {
		snprintf(t->why, sizeof(t->why), "no stack: %s; native stack: %s",
			 l->now.why[0] ? l->now.why : "none read",
			 now && now->native_why ? now->native_why : "not read");
		t->source = t->why;
	} else if (now && now->nk && !running)
		t->source = "blocked: kernel stack read now";
	if (now && (now->npy || native || (now->nk && !running))) { /* list_thread's frames */
		t->from = "read-now";
		t->age_ns = 0;
	}
	return now;
}

/* Append the ids of frames read now (a range of l->now.ids) at *m. */
static void add_read_now(struct listing *l, uint32_t first, uint32_t n, uint32_t *m)
{
	uint32_t i;

	for (i = 0; i < n && *m < l->max_frames; i++)
		l->out_ids[(*m)++] = l->now.ids[first + i];
}

/* The thread's frames from BPF (n of them in l->ids), copied into the
 * reply at *m. */
static int add_frames(struct daemon *d, struct listing *l, uint32_t n, uint32_t *m)
{
	uint32_t i;
	int64_t id;
	uint64_t v;

	for (i = 0; i < n && *m < l->max_frames; i++) {
		if (!view_keeps(l->kernel ? 0 : VIEW_NO_KERNEL,
				     d->agg.dict->frames[l->ids[i]].kind))
			continue;
		if (hashmap_get(&l->map, l->ids[i], &v)) {
			id = (int64_t)v;
		} else {
			id = stackset_copy_frame(l->out, d->agg.dict, l->ids[i]);
			if (id < 0 || hashmap_put(&l->map, l->ids[i], (uint64_t)id))
				return -ENOMEM;
		}
		l->out_ids[(*m)++] = (uint32_t)id;
	}
	return 0;
}

/* BPF's stack of the thread is newer than the last ring read (it was
 * switched out or sampled just now, its stack records still on their
 * way): the stack read now stands in, where there is one. */
static void not_in_hand(struct thread_now *t)
{
	t->have = t->blocked = false;
	t->from = "";
	t->age_ns = 0;
	t->source = "its latest stack not read from the ring yet";
}

static int list_thread(struct daemon *d, struct thread_now *t, void *arg)
{
	const struct pynow_thread *now = NULL, *py;
	struct listing *l = arg;
	uint32_t n = 0, m = 0;
	int64_t id;
	int err;

	if (t->have) {
		err = ingest_thread_frames(&d->in, l->p, &t->s, t->blocked, true, l->ids,
					   INGEST_MAX_FRAMES, &n);
		if (err == -EAGAIN)
			not_in_hand(t);
		if (err)
			n = 0;
	}
	if (!t->have)
		now = read_now(l, t, d->cfg.offcpu);
	/* Named by Python too where its state was read, whoever gave the stack. */
	py = pynow_find(&l->now, t->tid);
	t->pyname = py ? py->pyname : "";
	if (t->blocked && t->state != 'R' && !t->wait[0])
		wait_from_frames(d->agg.dict, l->ids, n, t->wait, sizeof(t->wait));
	if (now && now->nk && t->state != 'R' && !t->wait[0])
		wait_from_frames(l->out, l->now.ids + now->k_first, now->nk, t->wait,
				 sizeof(t->wait));
	id = header_frame(l->out, t);
	if (id < 0)
		return (int)id;
	l->out_ids[m++] = (uint32_t)id;
	err = add_frames(d, l, n, &m);
	if (err)
		return err;
	if (now) {
		if (now->nu) /* native and Python frames merged */
			add_read_now(l, now->u_first, now->nu, &m);
		else
			add_read_now(l, now->py_first, now->npy, &m);
		if (t->state != 'R') /* a running thread's is the interrupt's */
			add_read_now(l, now->k_first, now->nk, &m);
	}
	return stackset_add(l->out, l->out_ids, m, 1);
}

/* On the ingest thread: a process never sampled (every thread blocked
 * since before profd) gets its entry here, and naming frames fills
 * ingest's caches. */
static int list_threads_job(struct daemon *d, void *arg)
{
	char comm[PROFD_COMM_LEN + 1] = "";
	struct listing *l = arg;

	l->p = proctable_find_live(&d->pt, l->pid);
	if (!l->p)
		l->p = proctable_get(&d->pt, l->pid, comm);
	if (!l->p)
		return -ESRCH; /* gone, or the process table is full */
	if (l->uid && l->p->uid != l->uid)
		return -EACCES;
	return each_thread(d, l->pid, list_thread, l);
}

int control_thread_stacks(struct daemon *d, uint32_t pid, uint32_t uid, bool kernel, bool locals,
			  struct stackset *out)
{
	struct listing l = { .pid = pid, .uid = uid, .out = out, .kernel = kernel,
			     .max_frames = LISTING_MAX_FRAMES + (locals ? PYNOW_MAX_LOCALS : 0) };
	int err = control_may_look(d, pid, uid);

	/* Read before the job, on this thread: the process controls how long
	 * its memory takes, and the ingest thread must not wait on it. */
	if (!err)
		err = pynow_read(&l.now, pid, kernel, locals, out);
	l.ids = malloc(INGEST_MAX_FRAMES * sizeof(*l.ids));
	l.out_ids = malloc(l.max_frames * sizeof(*l.out_ids));
	hashmap_init(&l.map);
	if (!err && (!l.ids || !l.out_ids))
		err = -ENOMEM;
	if (!err)
		err = daemon_on_ingest(d, list_threads_job, &l);
	pynow_free(&l.now);
	hashmap_free(&l.map);
	free(l.ids);
	free(l.out_ids);
	return err;
}
