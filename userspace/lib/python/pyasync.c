#include "pyasync.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pycode.h"
#include "pymem.h"
#include "pytstate.h"

#define MAX_OBJECT 4096	  /* bytes of a task or generator we read at most */
#define MAX_SET_SLOTS 256 /* awaited_by sets bigger than this are skipped */
#define OBJ_ALIGN_MASK (~(uint64_t)PYOFF_STACKREF_TAG)

struct walk {
	const struct pyruntime *rt;
	struct pyasync_layout a;
	pyasync_fn fn;
	void *arg;
	size_t ntasks;
	uint8_t obj[MAX_OBJECT];
	struct pyasync_task t;
};

static bool in_struct(uint64_t off, uint64_t width, uint64_t size)
{
	return size > 0 && size <= MAX_OBJECT && off + width <= size;
}

static int read_asyncio_dbg(const struct pyruntime *rt, struct pyasync_dbg *a)
{
	uint64_t addr;
	int err = pyruntime_asyncio_debug(rt, &addr);

	if (!err)
		err = pymem_read(rt->pid, addr, a, sizeof(*a));
	if (err)
		return err;
	if (!in_struct(a->task.name, 8, a->task.size) ||
	    !in_struct(a->task.coro, 8, a->task.size) ||
	    !in_struct(a->task.node, 16, a->task.size) ||
	    !in_struct(a->task.awaited_by, 8, a->task.size) ||
	    !in_struct(a->task.awaited_by_is_set, 1, a->task.size) ||
	    a->interp.tasks_head >= (1u << 20) || a->tstate.tasks_head >= (1u << 20) ||
	    a->tstate.running_task >= (1u << 20))
		return -EINVAL;
	return 0;
}

static int read_debug_offsets(const struct pyruntime *rt, struct pyoff_async *po)
{
	uint8_t head[PYOFF_DEBUG_READ_SIZE];
	int err = pymem_read(rt->pid, rt->runtime_addr, head, sizeof(head));

	if (!err)
		err = pyoffsets_async_from_debug(head, sizeof(head), po);
	return !err && po->gen_size > MAX_OBJECT ? -EINVAL : err;
}

int pyasync_layout_read(const struct pyruntime *rt, struct pyasync_layout *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (rt->major != 3 || rt->minor < 14)
		return -EPROTONOSUPPORT;
	err = read_debug_offsets(rt, &out->po);
	if (!err)
		err = read_asyncio_dbg(rt, &out->dbg);
	out->known = !err;
	return err;
}

static uint64_t get_u64(const uint8_t *buf, uint64_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

static uint64_t type_of(const struct pyruntime *rt, uint64_t obj)
{
	uint64_t type = 0;

	if (pymem_read_u64(rt->pid, obj + rt->off.object_type, &type))
		return 0;
	return type;
}

/* "str", "int", ...: the type's tp_name, at most size - 1 bytes. */
static int type_name(const struct pyruntime *rt, uint64_t obj, char *buf, size_t size)
{
	uint64_t type = type_of(rt, obj), name;

	memset(buf, 0, size);
	if (!type || pymem_read_u64(rt->pid, type + rt->off.type_name, &name) ||
	    pymem_read(rt->pid, name, buf, size - 1))
		return -EFAULT;
	return 0;
}

/* A small non-negative int (3.12+ layout: lv_tag = digits << 3 | sign). */
static int read_small_int(const struct pyruntime *rt, const struct pyoff_async *po, uint64_t obj,
			  uint64_t *v)
{
	uint64_t tag;
	uint32_t digits[2] = {0, 0};
	unsigned int n;

	if (pymem_read_u64(rt->pid, obj + po->lng[1], &tag))
		return -EFAULT;
	n = (unsigned int)(tag >> 3);
	if ((tag & 3) == 1) { /* zero */
		*v = 0;
		return 0;
	}
	if ((tag & 3) || n == 0 || n > 2 ||
	    pymem_read(rt->pid, obj + po->lng[2], digits, n * sizeof(digits[0])))
		return -EINVAL;
	*v = (uint64_t)digits[0] | (uint64_t)digits[1] << 30;
	return 0;
}

/* A task's name is a str, or an int _asyncio formats as "Task-N" when
 * asked (the name is made lazily). */
static void task_name(const struct pyruntime *rt, const struct pyoff_async *po, uint64_t obj,
		      char *buf, size_t size, bool *named)
{
	char tn[16];
	uint64_t n;

	snprintf(buf, size, "?");
	*named = false;
	if (!obj || type_name(rt, obj, tn, sizeof(tn)))
		return;
	if (!strcmp(tn, "str")) {
		pycode_read_str(rt->pid, &rt->off, obj, buf, size);
		*named = true;
	} else if (!strcmp(tn, "int") && !read_small_int(rt, po, obj, &n)) {
		snprintf(buf, size, "Task-%llu", (unsigned long long)n);
	}
}

int pyasync_task_name(const struct pyruntime *rt, uint64_t task, char *buf, size_t size,
		      bool *named)
{
	uint64_t name;

	if (!rt->async.known)
		return -ENOENT;
	if (pymem_read_u64(rt->pid, task + rt->async.dbg.task.name, &name))
		return -EFAULT;
	task_name(rt, &rt->async.po, name & OBJ_ALIGN_MASK, buf, size, named);
	return 0;
}

/* The object a generator suspended in `await` / `yield from` waits on:
 * near the top of its frame's value stack.  0 when it is not a coroutine
 * of the same type (a Future, a Task, an iterator): the chain ends
 * there. */
static uint64_t awaited_coro(const struct walk *w, uint64_t frame, uint64_t gen_type)
{
	uint64_t sp, obj, depth = w->a.po.await_depth;

	if (pymem_read_u64(w->rt->pid, frame + w->a.po.frame_stackpointer, &sp) || sp < 16 ||
	    pymem_read_u64(w->rt->pid, sp - 8 * depth, &obj))
		return 0;
	obj &= OBJ_ALIGN_MASK;
	return obj && type_of(w->rt, obj) == gen_type ? obj : 0;
}

/* The coroutine chain from the task's coroutine inwards. */
static void coro_chain(struct walk *w, uint64_t coro)
{
	const struct profd_pyoffsets *off = &w->rt->off;
	struct pyasync_task *t = &w->t;
	uint8_t *g = w->obj;

	while (coro && t->nframes < PYASYNC_MAX_CHAIN) {
		uint64_t frame = coro + w->a.po.gen_iframe, code, instr;
		int8_t state;

		if (pymem_read(w->rt->pid, coro, g, w->a.po.gen_size))
			return;
		state = (int8_t)g[w->a.po.gen_frame_state];
		if (state >= w->a.po.state_done ||
		    pymem_read_u64(w->rt->pid, frame + off->frame_code, &code) ||
		    pymem_read_u64(w->rt->pid, frame + off->frame_instr, &instr))
			return;
		code &= OBJ_ALIGN_MASK;
		t->code[t->nframes] = code;
		t->instr[t->nframes++] = pycode_offset_from_frame(off, code, instr);
		coro = state == w->a.po.state_yield_from
			   ? awaited_coro(w, frame, get_u64(g, off->object_type))
			   : 0;
	}
}

static void add_awaiter(struct pyasync_task *t, uint64_t obj)
{
	if (obj && t->nawaiters < PYASYNC_MAX_AWAITERS)
		t->awaited_by[t->nawaiters++] = obj & OBJ_ALIGN_MASK;
}

/* awaited_by: one awaiter, or a set of them (slots: key, hash), read in
 * one go. */
static void awaiters(struct walk *w, uint64_t obj, bool is_set)
{
	uint64_t table, mask, i, slots[2 * MAX_SET_SLOTS];
	const uint64_t *so = w->a.po.set;

	if (!obj || !is_set) {
		add_awaiter(&w->t, obj);
		return;
	}
	if (pymem_read_u64(w->rt->pid, obj + so[2], &table) ||
	    pymem_read_u64(w->rt->pid, obj + so[3], &mask) || mask >= MAX_SET_SLOTS ||
	    pymem_read(w->rt->pid, table, slots, (mask + 1) * 2 * sizeof(uint64_t)))
		return;
	for (i = 0; i <= mask; i++)
		add_awaiter(&w->t, slots[2 * i]);
}

static int one_task(struct walk *w, uint64_t task, uint64_t running)
{
	const struct pyasync_dbg *a = &w->a.dbg;
	bool named;
	int err;

	memset(&w->t, 0, sizeof(w->t));
	w->t.addr = task;
	err = pymem_read(w->rt->pid, task, w->obj, a->task.size);
	if (err)
		return err == -ESRCH ? err : 0; /* freed under us: skip it */
	awaiters(w, get_u64(w->obj, a->task.awaited_by) & OBJ_ALIGN_MASK,
		 w->obj[a->task.awaited_by_is_set] != 0);
	/* The chain reuses obj: read what the task says first. */
	{
		uint64_t name = get_u64(w->obj, a->task.name) & OBJ_ALIGN_MASK;
		uint64_t coro = get_u64(w->obj, a->task.coro) & OBJ_ALIGN_MASK;

		task_name(w->rt, &w->a.po, name, w->t.name, sizeof(w->t.name), &named);
		coro_chain(w, coro);
	}
	w->t.tid = (uint32_t)running;
	w->ntasks++;
	return w->fn(&w->t, w->arg);
}

/* A circular list of tasks (struct llist_node {next, prev} at node in
 * each task, head in the thread or interpreter state).  tid: the thread
 * whose list it is, with its running task. */
static int each_in_list(struct walk *w, uint64_t head, uint64_t running_task, uint32_t tid)
{
	uint64_t node;
	int err = 0;

	if (pymem_read_u64(w->rt->pid, head, &node))
		return 0;
	while (!err && node && node != head && w->ntasks < PYASYNC_MAX_TASKS) {
		uint64_t task = node - w->a.dbg.task.node;

		err = one_task(w, task, task == running_task ? tid : 0);
		if (!err && pymem_read_u64(w->rt->pid, node, &node))
			break;
	}
	return err;
}

/* One thread state's tasks (tstate 0: those of the interpreter's threads
 * that have exited, once its thread list is done). */
static int tasks_of(const struct pyruntime *rt, uint64_t interp, uint64_t ts, void *arg)
{
	struct walk *w = arg;
	uint64_t running, tid;

	if (!ts)
		return each_in_list(w, interp + w->a.dbg.interp.tasks_head, 0, 0);
	if (pymem_read_u64(rt->pid, ts + w->a.dbg.tstate.running_task, &running) ||
	    pymem_read_u64(rt->pid, ts + rt->off.tstate_native_thread_id, &tid))
		return 0;
	return each_in_list(w, ts + w->a.dbg.tstate.tasks_head, running & OBJ_ALIGN_MASK,
			    (uint32_t)tid);
}

int pyasync_tasks(const struct pyruntime *rt, pyasync_fn fn, void *arg)
{
	struct walk *w;
	int err;

	if (rt->major != 3 || rt->minor < 14)
		return -EPROTONOSUPPORT;
	w = calloc(1, sizeof(*w)); /* buffers too big for a stack */
	if (!w)
		return -ENOMEM;
	w->rt = rt;
	w->fn = fn;
	w->arg = arg;
	/* Read afresh: a listing is rare, and _asyncio may have been
	 * imported since the process was first looked at. */
	err = pyasync_layout_read(rt, &w->a);
	if (!err)
		err = pytstate_each(rt, tasks_of, w);
	free(w);
	return err;
}
