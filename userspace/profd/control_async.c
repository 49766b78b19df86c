/* control_async.c: profctl stacks --async, a process's asyncio tasks and
 * the coroutine chain each is suspended in (CPython 3.14+, pyasync.c).
 *
 * Read from the process's memory outside the state lock (which is only
 * taken to check who may look), on a reader thread with a deadline
 * (memread.h), with a code-object cache of its own: a listing costs the
 * process table nothing, the samples nothing, and the other clients at
 * most CONTROL_MEMREAD_TIMEOUT_MS. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "control.h"
#include "statelock.h"
#include "hashmap.h"
#include "memread.h"
#include "pyasync.h"
#include "pycode.h"

/* A process with thousands of
 * tasks (or memory that lies) gets this long, then the listing says
 * where it stopped. */
#define ASYNC_BUDGET_NS (500ull * 1000000ull)

struct task_list {
	struct pyasync_task *v;
	size_t n, cap;
	struct hashmap by_addr; /* task address -> index in v */
	uint64_t deadline_ns;
	bool cut;
};

static int keep_task(const struct pyasync_task *t, void *arg)
{
	struct task_list *l = arg;

	if (clock_mono_ns() > l->deadline_ns) {
		l->cut = true;
		return 1; /* stop the walk, keep what came */
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct pyasync_task *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = *t;
	return hashmap_put(&l->by_addr, t->addr, l->n++);
}

static const char *name_of(const struct task_list *l, uint64_t addr)
{
	uint64_t i;

	return hashmap_get(&l->by_addr, addr, &i) ? l->v[i].name : NULL;
}

static void no_tabs(char *s)
{
	for (; *s; s++)
		if (*s == '\t' || *s == '\n' || *s == ',')
			*s = ' ';
}

/* The task's header frame (protocol.h, PROTO_RESP_STACKS with
 * PROTO_STACKS_ASYNC): address, name, tid running it, awaiters. */
static int64_t task_header(struct stackset *out, const struct task_list *l, struct pyasync_task *t)
{
	char text[1024], by[640] = "";
	size_t len = 0;
	uint32_t i;

	no_tabs(t->name);
	for (i = 0; i < t->nawaiters && len < sizeof(by) - PYASYNC_NAME_MAX - 2; i++) {
		const char *n = name_of(l, t->awaited_by[i]);

		if (n) /* a task; a plain future has no name */
			len +=
			    (size_t)snprintf(by + len, sizeof(by) - len, "%s%s", len ? "," : "", n);
	}
	snprintf(text, sizeof(text), "%#" PRIx64 "\t%s\t%u\t%s", t->addr, t->name, t->tid, by);
	return stackset_intern(out, FRAME_ROOT, text);
}

static int add_task(struct stackset *out, struct pycode_cache *pyc, const struct pyruntime *rt,
		    const struct task_list *l, struct pyasync_task *t)
{
	uint32_t ids[PYASYNC_MAX_CHAIN + 1], n = 0, i;
	int64_t id = task_header(out, l, t);
	char name[2 * PYCODE_MAX_STR];

	if (id < 0)
		return (int)id;
	ids[n++] = (uint32_t)id;
	for (i = 0; i < t->nframes; i++) {
		/* Read from the live task just now: nothing to check it against. */
		if (pycode_name(pyc, rt, t->code[i], 0, t->instr[i], name, sizeof(name)))
			snprintf(name, sizeof(name), "[coroutine %#" PRIx64 "]", t->code[i]);
		id = stackset_intern(out, FRAME_PYTHON, name);
		if (id < 0)
			return (int)id;
		ids[n++] = (uint32_t)id;
	}
	return stackset_add(out, ids, n, 1);
}

/* Who may look: the process's owner or root, as for the thread listing.
 * Read only: a process profd has not seen is looked up in /proc, not
 * added to the table (that is ingest's to do). */
int control_may_look(struct daemon *d, uint32_t pid, uint32_t uid)
{
	char comm[PROFD_COMM_LEN + 1];
	uint32_t owner = 0, ppid;
	uint64_t start;
	struct proc *p;
	char *exe = NULL;
	bool known;
	int err;

	daemon_lock_other(d);
	p = proctable_find_live(&d->pt, pid);
	known = p != NULL;
	if (p)
		owner = p->uid;
	daemon_unlock(d);
	if (!known) {
		err = proc_read_identity("/proc", pid, &start, &owner, &ppid, comm, &exe);
		free(exe);
		if (err)
			return -ESRCH;
	}
	return uid && owner != uid ? -EACCES : 0;
}

/* A last entry that says the listing is not whole: the time budget ran
 * out, or the process has more tasks than one listing takes. */
static int add_cut_note(struct stackset *out, const struct task_list *l)
{
	char text[128];
	uint32_t id;
	int64_t v;

	if (l->cut)
		snprintf(text, sizeof(text), "0x0\t[listing cut after %zu tasks: %llu ms spent]\t0\t",
			 l->n, ASYNC_BUDGET_NS / 1000000ull);
	else
		snprintf(text, sizeof(text), "0x0\t[listing cut at %u tasks]\t0\t",
			 PYASYNC_MAX_TASKS);
	v = stackset_intern(out, FRAME_ROOT, text);
	if (v < 0)
		return (int)v;
	id = (uint32_t)v;
	return stackset_add(out, &id, 1, 1);
}

static int read_tasks(uint32_t pid, struct stackset *out)
{
	struct task_list l = {.deadline_ns = clock_mono_ns() + ASYNC_BUDGET_NS};
	struct pycode_cache *pyc = NULL;
	struct pyruntime rt;
	size_t i;
	int err = pyruntime_detect((int)pid, &rt);

	hashmap_init(&l.by_addr);
	if (!err)
		err = pyasync_tasks(&rt, keep_task, &l);
	if (err == 1) /* the budget: what came is listed */
		err = 0;
	if (!err && !(pyc = pycode_cache_new()))
		err = -ENOMEM;
	for (i = 0; !err && i < l.n; i++)
		err = add_task(out, pyc, &rt, &l, &l.v[i]);
	if (!err && (l.cut || l.n >= PYASYNC_MAX_TASKS))
		err = add_cut_note(out, &l);
	pycode_cache_free(pyc);
	hashmap_free(&l.by_addr);
	free(l.v);
	return err;
}

/* What the reader owns: freed by whichever of it and the control thread
 * is done last. */
struct async_job {
	uint32_t pid;
	int err;
	struct stackset *ss;
};

static void job_read(void *arg)
{
	struct async_job *j = arg;

	j->err = read_tasks(j->pid, j->ss);
}

static void job_drop(void *arg)
{
	struct async_job *j = arg;

	stackset_free(j->ss);
	free(j);
}

int control_stackset_move(struct stackset *out, struct stackset *from)
{
	struct stackset empty;

	if (out->nframes || out->nstacks || out->nmodules)
		return -EINVAL;
	empty = *out;
	*out = *from;
	*from = empty;
	return 0;
}

int control_async_tasks(struct daemon *d, uint32_t pid, uint32_t uid, struct stackset *out)
{
	struct async_job *j;
	int err = control_may_look(d, pid, uid);

	if (err)
		return err;
	j = calloc(1, sizeof(*j));
	if (!j || !(j->ss = stackset_new())) {
		free(j);
		return -ENOMEM;
	}
	j->pid = pid;
	err = memread_run(job_read, job_drop, j, CONTROL_MEMREAD_TIMEOUT_MS);
	if (err == -ETIMEDOUT)
		return err; /* j is the reader's now */
	if (!err)
		err = j->err;
	if (!err)
		err = control_stackset_move(out, j->ss);
	job_drop(j);
	return err;
}
