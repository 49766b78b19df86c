/* ingest_pynames.c: the names of Python frames and asyncio tasks.  A name
 * comes from the process's cache (pyproc, lib/python) while it is fresh
 * (checked against the process's memory this epoch); else it is read from
 * the process: on the backend's worker when there is one, since a read can
 * wait on the process's mm lock (hundreds of ms in an exec storm) and this
 * thread holds the state every client waits for.  Until the answer comes, a frame seen
 * before keeps the name it was last checked with (its stack is counted,
 * not memoized), and a frame never seen makes its sample wait like one
 * whose file is being read. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "ingest.h"
#include "ingest_int.h"
#include "pyproc.h"
#include "pyasync.h"
#include "pycode.h"

#define TASK_UNREADABLE "[task unreadable]"
/* Ancestors looked at for a donor: a fork's parent; a forkserver's
 * child, the forkserver and the program that started it. */
#define DONOR_DEPTH 4

static uint32_t epoch_of(uint64_t mono)
{
	return (uint32_t)(mono >> INGEST_PY_RECHECK_SHIFT);
}

/* A name kept: when the cache started over, stacks memoized with names
 * it no longer has are built again (renames are noticed against it). */
static void keep_name(struct proc *p, uint64_t key, uint32_t epoch, int64_t id)
{
	if (pyproc_keep_name(p->ing->py, key, epoch, id))
		hashmap_free(&p->ing->stack_memo);
}

/* Another name at a checked address (a code object or task freed and its
 * memory reused): stacks memoized with the old one are built again. */
static void renamed(struct proc *p, bool cached, int64_t old, int64_t id)
{
	if (cached && old != id)
		hashmap_free(&p->ing->stack_memo);
}

/* A live ancestor of p running the same interpreter at the same addresses
 * (a fork's parent, the multiprocessing forkserver): the code objects p
 * inherited are there too.  What names a child that exits as it wakes
 * from a long sleep, whose only sample (off-CPU, at its wake-up) comes
 * too late to read its own memory.  0: none (spawned children, whose
 * interpreter starts afresh, have none). */
static uint32_t donor_of(struct ingest *in, const struct proc *p)
{
	const struct pyruntime *rt = p->ing->py->rt, *up;
	uint32_t pid = p->ppid;
	int depth;

	for (depth = 0; depth < DONOR_DEPTH && pid > 1; depth++) {
		struct proc *q = proctable_find_live(in->pt, pid);

		if (!q || !q->ing)
			return 0;
		up = q->ing->py->rt;
		if (up && up->major == rt->major && up->minor == rt->minor &&
		    up->runtime_addr == rt->runtime_addr && q->start_time <= p->start_time)
			return pid;
		pid = q->ppid;
	}
	return 0;
}

/* Names are asked of the worker, unless there is none (tests) or a
 * client's request reads them here (ingest_thread_frames). */
static bool asks_worker(const struct ingest *in)
{
	return in->be.py_name && !in->py_read_here;
}

/* Ask the worker for the name at addr once an epoch: 1 while the answer is
 * awaited (or, past PY_ASKS_MAX, until it can be asked), 0 when it came
 * back unreadable this epoch, -ENOMEM.  waits: a sample waits for it. */
static int ask_name(struct ingest *in, struct proc *p, uint64_t key, const struct ingest_py_ask *a,
		    bool waits)
{
	int r = pyproc_asked(p->ing->py, key, a->epoch);

	if (r >= 0)
		return r;
	r = pyproc_ask(p->ing->py, key, a->epoch);
	if (r == -EBUSY)
		return 1; /* asked once answers come back */
	if (r)
		return r;
	in->c.py_names_asked++;
	if (waits) /* the daemon keeps close to its answers */
		in->c.requests++;
	in->be.py_name(in->be.ctx, a, p->ing->py->rt);
	return 1;
}

/* Who asks for a name and when (a's pid, start time, epoch, generation
 * and donor). */
static void ask_from(struct ingest *in, const struct proc *p, struct ingest_py_ask *a,
		     uint32_t epoch)
{
	a->pid = p->pid;
	a->start_time = p->start_time;
	a->epoch = epoch;
	a->gen = p->ing->py->gen;
	a->donor = a->task || !a->fp ? 0 : donor_of(in, p);
}

/* A name due for a read, asked of the worker (a: what to read; pid,
 * epoch and gen filled here): the id to count now, or -EAGAIN
 * (unreadable).  Until the answer, a frame seen before counts under the
 * name last checked (*stable cleared: not memoized) and one never named
 * waits (frames_wait) under a placeholder. */
static int64_t await_name(struct ingest *in, struct proc *p, uint64_t key, struct ingest_py_ask *a,
			  bool cached, int64_t old, uint32_t epoch, bool *stable)
{
	int r;

	ask_from(in, p, a, epoch);
	if (p->exited && cached) { /* its memory changes no more: the name stands */
		in->c.py_frames_named_after_exit++;
		keep_name(p, key, epoch, old);
		return old;
	}
	/* Gone: only an answer asked while it lived, or one its donor
	 * gives, can still name it. */
	if (p->exited && !a->donor)
		r = pyproc_asked(p->ing->py, key, epoch) > 0;
	else if ((r = ask_name(in, p, key, a, !cached)) < 0)
		return r;
	if (!r)
		return -EAGAIN;
	*stable = false;
	if (cached)
		return old;
	in->frames_wait = true;
	return aggregate_frame(in->agg, a->task ? FRAME_TASK : FRAME_PYTHON,
			       a->task ? "[task being read]" : "[python frame being read]");
}

/* Read here: the code object's name, validated by pycode. */
static int64_t read_python_frame(struct ingest *in, struct proc *p, uint64_t key,
				 const struct py_raw_frame *f, bool cached, int64_t old,
				 uint32_t epoch)
{
	char text[2 * PYCODE_MAX_STR + 64];
	int64_t id;
	int err = pycode_name(in->pyc, p->ing->py->rt, f->code, f->fp, f->off, text, sizeof(text));

	if (err == -ESRCH && !cached)
		err = pycode_name_in_donor(in->pyc, p->ing->py->rt, (int)donor_of(in, p), f->code,
					   f->fp, f->off, text, sizeof(text));
	/* Gone (the last samples of a program are often read after its exit):
	 * its memory changes no more, so the name last checked stands. */
	if (err == -ESRCH && cached) {
		in->c.py_frames_named_after_exit++;
		return old;
	}
	if (err)
		return -EAGAIN;
	id = aggregate_frame(in->agg, FRAME_PYTHON, text);
	if (id >= 0) {
		renamed(p, cached, old, id);
		keep_name(p, key, epoch, id);
		pyproc_code_mark(p->ing->py, pyproc_code_key(f->code, f->fp), epoch);
	}
	return id;
}

int64_t ingest_python_frame(struct ingest *in, struct proc *p, const struct py_raw_frame *f,
			    uint64_t mono, bool *stable)
{
	uint64_t key = pyproc_frame_key(f->code, f->fp, f->off);
	uint32_t epoch = epoch_of(mono), named;
	int64_t old = -1;
	bool cached = pyproc_name(p->ing->py, key, &old, &named);
	struct ingest_py_ask a = {.addr = f->code, .off = f->off, .fp = f->fp};

	if (cached && named == epoch)
		return old;
	/* Its code object checked this epoch for another instruction. */
	if (cached && pyproc_code_checked(p->ing->py, pyproc_code_key(f->code, f->fp), epoch)) {
		keep_name(p, key, epoch, old);
		return old;
	}
	if (asks_worker(in))
		return await_name(in, p, key, &a, cached, old, epoch, stable);
	return read_python_frame(in, p, key, f, cached, old, epoch);
}

void ingest_python_prefetch(struct ingest *in, uint32_t tgid, const struct raw_stack *py)
{
	struct proc *p = tgid ? proctable_find_live(in->pt, tgid) : NULL;
	uint32_t i, epoch = epoch_of(clock_mono_ns()), named;
	int64_t old;

	if (!p || !p->ing || !p->ing->py->rt || !asks_worker(in))
		return;
	for (i = 0; i < py->nr / 2; i++) {
		struct py_raw_frame f = py_raw_frame(py, i);
		struct ingest_py_ask a = {.addr = f.code, .off = f.off, .fp = f.fp};
		uint64_t key = pyproc_frame_key(f.code, f.fp, f.off);

		if ((f.flags & PROFD_PYFRAME_TASK) || pyproc_name(p->ing->py, key, &old, &named))
			continue;
		ask_from(in, p, &a, epoch);
		if (ask_name(in, p, key, &a, false) < 0)
			return;
	}
}

bool ingest_python_names_same(struct ingest *in, struct proc *p, uint64_t pystack_id,
			      uint64_t mono, bool *checked)
{
	const struct raw_stack *py = ingest_resolve_stack(in, pystack_id, PROFD_STACK_PYTHON);
	uint32_t i, named;
	int64_t id;

	*checked = true;
	if (!py || !p->ing->py->rt)
		return false;
	for (i = 0; i < py->nr / 2; i++) {
		struct py_raw_frame f = py_raw_frame(py, i);

		/* A task's name is checked by building the stack again. */
		if (f.flags & PROFD_PYFRAME_TASK)
			return false;
		/* Read here, a changed name differs from the one cached.
		 * Asked of the worker, the name stands until the answer
		 * (*checked cleared), and ingest_py_named forgets the memo
		 * if it changed. */
		if (!pyproc_name(p->ing->py, pyproc_frame_key(f.code, f.fp, f.off), &id, &named) ||
		    ingest_python_frame(in, p, &f, mono, checked) != id)
			return false;
	}
	return true;
}

static int64_t task_named(struct ingest *in, struct proc *p, const char *name, bool is_named)
{
	char label[PYASYNC_NAME_MAX + 48];

	pyproc_task_label(p->ing->py, name, is_named, label, sizeof(label));
	return aggregate_frame(in->agg, FRAME_TASK, label);
}

int64_t ingest_task_frame(struct ingest *in, struct proc *p, uint64_t addr, uint64_t mono,
			  bool *stable)
{
	char name[PYASYNC_NAME_MAX];
	uint64_t key = pyproc_task_key(addr);
	uint32_t epoch = epoch_of(mono), named;
	int64_t old = -1, id;
	bool cached = pyproc_name(p->ing->py, key, &old, &named), is_named;

	if (cached && named == epoch)
		return old;
	if (asks_worker(in)) {
		struct ingest_py_ask a = {.addr = addr, .task = true};

		id = await_name(in, p, key, &a, cached, old, epoch, stable);
		return id == -EAGAIN ? aggregate_frame(in->agg, FRAME_TASK, TASK_UNREADABLE) : id;
	}
	if (pyasync_task_name(p->ing->py->rt, addr, name, sizeof(name), &is_named))
		return cached ? old : aggregate_frame(in->agg, FRAME_TASK, TASK_UNREADABLE);
	id = task_named(in, p, name, is_named);
	if (id >= 0) {
		renamed(p, cached, old, id);
		keep_name(p, key, epoch, id);
	}
	return id;
}

/* The process an answer is for: live, or exited since (its late samples
 * still take the name), and neither exec'ed nor reset since it asked. */
static struct proc *asker(struct ingest *in, const struct ingest_py_ask *a)
{
	struct proc *p = proctable_find_live(in->pt, a->pid);

	if (!p || p->start_time != a->start_time)
		p = proctable_find_exited(in->pt, a->pid, a->start_time);
	if (!p || !p->ing->py->rt || p->ing->py->gen != a->gen)
		return NULL;
	return p;
}

void ingest_py_named(struct ingest *in, const struct ingest_py_ask *a, int err, const char *text,
		     bool is_named)
{
	struct proc *p = asker(in, a);
	uint32_t named;
	int64_t old = -1, id;
	uint64_t key;
	bool cached;

	if (!p)
		return;
	key = a->task ? pyproc_task_key(a->addr) : pyproc_frame_key(a->addr, a->fp, a->off);
	if (!pyproc_answer_fresh(p->ing->py, key, a->epoch))
		return;
	if (err == -EBUSY || err == -ENOMEM) { /* not read (the worker's queue was full) */
		pyproc_ask_done(p->ing->py, key);
		return;
	}
	cached = pyproc_name(p->ing->py, key, &old, &named);
	if (err == -ESRCH && cached) { /* gone: the name last checked stands */
		in->c.py_frames_named_after_exit++;
		id = old;
	} else if (err) {
		pyproc_ask_failed(p->ing->py, key, a->epoch);
		return;
	} else {
		id = a->task ? task_named(in, p, text, is_named)
			     : aggregate_frame(in->agg, FRAME_PYTHON, text);
	}
	pyproc_ask_done(p->ing->py, key);
	if (id < 0)
		return;
	renamed(p, cached, old, id);
	keep_name(p, key, a->epoch, id);
	if (!a->task)
		pyproc_code_mark(p->ing->py, pyproc_code_key(a->addr, a->fp), a->epoch);
}
