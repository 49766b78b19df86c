/* ingest_pynames.c: the names of Python frames and asyncio tasks.  A name
 * comes from the process's cache while it is fresh (checked against the
 * process's memory this epoch); else it is read from the process: on the
 * backend's worker when there is one, since a read can wait on the
 * process's mm lock (hundreds of ms in an exec storm) and this thread holds
 * the state every client waits for.  Until the answer comes, a frame seen
 * before keeps the name it was last checked with (its stack is counted,
 * not memoized), and a frame never seen makes its sample wait like one
 * whose file is being read. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ingest.h"
#include "ingest_int.h"
#include "pyasync.h"
#include "pycode.h"

#define PY_FRAMES_MAX 65536 /* per process; a full cache starts over */
/* Distinct asyncio task names a process gets frames for: a server naming
 * a task per request must not grow the frame dictionary without end. */
#define TASK_NAMES_MAX 256
#define TASK_KEY_SALT 0x7461736b00000000ull /* task frames among py_frames */
#define ASK_FAILED 1ull			     /* py_asked: the answer was "unreadable" */
/* Answers a process may await: a program starting (thousands of code
 * objects new at once) asks the rest as answers come back. */
#define PY_ASKS_MAX 1024
#define TASK_UNREADABLE "[task unreadable]"

static uint64_t frame_key(uint64_t code, int64_t off)
{
	return hash64_mix(code ^ hash64_mix((uint64_t)off));
}

static uint64_t task_key(uint64_t addr)
{
	return hash64_mix(addr ^ TASK_KEY_SALT);
}

static uint32_t epoch_of(uint64_t mono)
{
	return (uint32_t)(mono >> INGEST_PY_RECHECK_SHIFT);
}

static int64_t cached_id(uint64_t v)
{
	return (int64_t)(uint32_t)v - 1;
}

/* A py_frames value: the frame id, and the epoch its name was checked. */
static uint64_t name_value(uint32_t epoch, int64_t id)
{
	return ((uint64_t)epoch << 32) | (uint64_t)(id + 1);
}

static void keep_name(struct proc *p, uint64_t key, uint32_t epoch, int64_t id)
{
	if (p->ing->py_frames.len >= PY_FRAMES_MAX) {
		hashmap_free(&p->ing->py_frames);
		hashmap_free(&p->ing->py_code_checked);
		/* Renames are noticed against py_frames (renamed()): stacks
		 * memoized with names it no longer has are built again. */
		hashmap_free(&p->ing->stack_memo);
	}
	hashmap_put(&p->ing->py_frames, key, name_value(epoch, id));
}

/* Another name at a checked address (a code object or task freed and its
 * memory reused): stacks memoized with the old one are built again. */
static void renamed(struct proc *p, bool cached, uint64_t v, int64_t id)
{
	if (cached && cached_id(v) != id)
		hashmap_free(&p->ing->stack_memo);
}

/* Names are asked of the worker, unless there is none (tests) or a
 * client's request reads them here (ingest_thread_frames). */
static bool asks_worker(const struct ingest *in)
{
	return in->be.py_name && !in->py_read_here;
}

/* Where the ask for key stands this epoch: 1 awaited, 0 answered
 * "unreadable", -1 not asked. */
static int asked(const struct proc *p, uint64_t key, uint32_t epoch)
{
	uint64_t v;

	if (!hashmap_get(&p->ing->py_asked, key, &v) || (uint32_t)(v >> 1) != epoch)
		return -1;
	return v & ASK_FAILED ? 0 : 1;
}

/* Ask the worker for the name at addr once an epoch: 1 while the answer is
 * awaited (or, past PY_ASKS_MAX, until it can be asked), 0 when it came
 * back unreadable this epoch, -ENOMEM.  waits: a sample waits for it. */
static int ask_name(struct ingest *in, struct proc *p, uint64_t key, const struct ingest_py_ask *a,
		    bool waits)
{
	int r = asked(p, key, a->epoch);

	if (r >= 0 || p->ing->py_names_pending >= PY_ASKS_MAX)
		return r >= 0 ? r : 1;
	if (p->ing->py_asked.len >= PY_FRAMES_MAX)
		hashmap_free(&p->ing->py_asked); /* an answer still counts when it comes */
	if (hashmap_put(&p->ing->py_asked, key, (uint64_t)a->epoch << 1))
		return -ENOMEM;
	p->ing->py_names_pending++;
	in->c.py_names_asked++;
	if (waits) /* the daemon keeps close to its answers */
		in->c.requests++;
	in->be.py_name(in->be.ctx, a, p->ing->py);
	return 1;
}

/* A name due for a read, asked of the worker: the id to count now, or
 * -EAGAIN (unreadable).  Until the answer, a frame seen before counts
 * under the name last checked (*stable cleared: not memoized) and one
 * never named waits (frames_wait) under a placeholder. */
static int64_t await_name(struct ingest *in, struct proc *p, uint64_t key, uint64_t addr,
			  int64_t off, bool task, bool cached, uint64_t v, uint32_t epoch, bool *stable)
{
	struct ingest_py_ask a = { .pid = p->pid, .start_time = p->start_time, .addr = addr,
				   .off = off, .epoch = epoch, .gen = p->ing->py_names_gen, .task = task };
	int r;

	if (p->exited && cached) { /* its memory changes no more: the name stands */
		in->c.py_frames_named_after_exit++;
		keep_name(p, key, epoch, cached_id(v));
		return cached_id(v);
	}
	/* Gone: only an answer asked while it lived can still name it. */
	if (p->exited)
		r = asked(p, key, epoch) > 0;
	else if ((r = ask_name(in, p, key, &a, !cached)) < 0)
		return r;
	if (!r)
		return -EAGAIN;
	*stable = false;
	if (cached)
		return cached_id(v);
	in->frames_wait = true;
	return aggregate_frame(in->agg, task ? FRAME_TASK : FRAME_PYTHON,
			       task ? "[task being read]" : "[python frame being read]");
}

/* Read here: the code object's name, validated by pycode. */
static int64_t read_python_frame(struct ingest *in, struct proc *p, uint64_t key, uint64_t code,
				 int64_t off, bool cached, uint64_t v, uint32_t epoch)
{
	char text[2 * PYCODE_MAX_STR + 64];
	int64_t id;
	int err = pycode_name(in->pyc, p->ing->py, code, off, text, sizeof(text));

	/* Gone (the last samples of a program are often read after its exit):
	 * its memory changes no more, so the name last checked stands. */
	if (err == -ESRCH && cached) {
		in->c.py_frames_named_after_exit++;
		return cached_id(v);
	}
	if (err)
		return -EAGAIN;
	id = aggregate_frame(in->agg, FRAME_PYTHON, text);
	if (id >= 0) {
		renamed(p, cached, v, id);
		keep_name(p, key, epoch, id);
		hashmap_put(&p->ing->py_code_checked, code, epoch);
	}
	return id;
}

int64_t ingest_python_frame(struct ingest *in, struct proc *p, uint64_t code, int64_t off,
			    uint64_t mono, bool *stable)
{
	uint64_t key = frame_key(code, off), v, checked;
	uint32_t epoch = epoch_of(mono);
	bool cached = hashmap_get(&p->ing->py_frames, key, &v);

	if (cached && (uint32_t)(v >> 32) == epoch)
		return cached_id(v);
	/* Its code object checked this epoch for another instruction. */
	if (cached && hashmap_get(&p->ing->py_code_checked, code, &checked) && checked == epoch) {
		hashmap_put(&p->ing->py_frames, key, name_value(epoch, cached_id(v)));
		return cached_id(v);
	}
	if (asks_worker(in))
		return await_name(in, p, key, code, off, false, cached, v, epoch, stable);
	return read_python_frame(in, p, key, code, off, cached, v, epoch);
}

bool ingest_python_names_same(struct ingest *in, struct proc *p, uint64_t pystack_id,
			      uint64_t mono, bool *checked)
{
	const struct raw_stack *py = ingest_resolve_stack(in, pystack_id, PROFD_STACK_PYTHON);
	uint64_t v;
	uint32_t i;

	*checked = true;
	if (!py || !p->ing->py)
		return false;
	for (i = 0; i < py->nr / 2; i++) {
		uint64_t code = py->ips[2 * i], word = py->ips[2 * i + 1];
		int64_t off = (int32_t)(uint32_t)word;

		/* A task's name is checked by building the stack again. */
		if ((word >> 32) & PROFD_PYFRAME_TASK)
			return false;
		/* Read here, a changed name differs from the one cached.
		 * Asked of the worker, the name stands until the answer
		 * (*checked cleared), and ingest_py_named forgets the memo
		 * if it changed. */
		if (!hashmap_get(&p->ing->py_frames, frame_key(code, off), &v) ||
		    ingest_python_frame(in, p, code, off, mono, checked) != cached_id(v))
			return false;
	}
	return true;
}

/* The label of a task's frame: its name, one frame for all unnamed tasks
 * (their coroutines below tell them apart), one for the names past
 * TASK_NAMES_MAX. */
static void task_label(struct proc *p, const char *name, bool is_named, char *out, size_t size)
{
	uint64_t h = hash64_str(name);

	if (!is_named)
		snprintf(out, size, "[unnamed task]");
	else if (hashmap_get(&p->ing->py_task_names, h, NULL) ||
		 (p->ing->py_task_names.len < TASK_NAMES_MAX && !hashmap_put(&p->ing->py_task_names, h, 1)))
		snprintf(out, size, "[task %s]", name);
	else
		snprintf(out, size, "[task: one of more than %d names]", TASK_NAMES_MAX);
}

static int64_t task_named(struct ingest *in, struct proc *p, const char *name, bool is_named)
{
	char label[PYASYNC_NAME_MAX + 48];

	task_label(p, name, is_named, label, sizeof(label));
	return aggregate_frame(in->agg, FRAME_TASK, label);
}

int64_t ingest_task_frame(struct ingest *in, struct proc *p, uint64_t addr, uint64_t mono,
			  bool *stable)
{
	char name[PYASYNC_NAME_MAX];
	uint64_t key = task_key(addr), v;
	uint32_t epoch = epoch_of(mono);
	bool cached = hashmap_get(&p->ing->py_frames, key, &v), is_named;
	int64_t id;

	if (cached && (uint32_t)(v >> 32) == epoch)
		return cached_id(v);
	if (asks_worker(in)) {
		id = await_name(in, p, key, addr, 0, true, cached, v, epoch, stable);
		return id == -EAGAIN ? aggregate_frame(in->agg, FRAME_TASK, TASK_UNREADABLE) : id;
	}
	if (pyasync_task_name(p->ing->py, addr, name, sizeof(name), &is_named))
		return cached ? cached_id(v)
			      : aggregate_frame(in->agg, FRAME_TASK, TASK_UNREADABLE);
	id = task_named(in, p, name, is_named);
	if (id >= 0) {
		renamed(p, cached, v, id);
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
	if (!p || !p->ing->py || p->ing->py_names_gen != a->gen)
		return NULL;
	return p;
}

void ingest_py_named(struct ingest *in, const struct ingest_py_ask *a, int err, const char *text,
		     bool is_named)
{
	struct proc *p = asker(in, a);
	uint64_t key, v;
	bool cached;
	int64_t id;

	if (!p)
		return;
	key = a->task ? task_key(a->addr) : frame_key(a->addr, a->off);
	if (p->ing->py_names_pending)
		p->ing->py_names_pending--;
	/* Asked again since (this one's epoch is over), or named since (a
	 * later answer, a client's read): that one is the newer. */
	if (hashmap_get(&p->ing->py_asked, key, &v) && (uint32_t)(v >> 1) > a->epoch)
		return;
	cached = hashmap_get(&p->ing->py_frames, key, &v);
	if (cached && (uint32_t)(v >> 32) > a->epoch)
		return;
	if (err == -EBUSY || err == -ENOMEM) { /* not read (the worker's queue was full) */
		hashmap_del(&p->ing->py_asked, key);
		return;
	}
	if (err == -ESRCH && cached) { /* gone: the name last checked stands */
		in->c.py_frames_named_after_exit++;
		id = cached_id(v);
	} else if (err) {
		hashmap_put(&p->ing->py_asked, key, ((uint64_t)a->epoch << 1) | ASK_FAILED);
		return;
	} else {
		id = a->task ? task_named(in, p, text, is_named)
			     : aggregate_frame(in->agg, FRAME_PYTHON, text);
	}
	hashmap_del(&p->ing->py_asked, key);
	if (id < 0)
		return;
	renamed(p, cached, v, id);
	keep_name(p, key, a->epoch, id);
	if (!a->task)
		hashmap_put(&p->ing->py_code_checked, a->addr, a->epoch);
}
