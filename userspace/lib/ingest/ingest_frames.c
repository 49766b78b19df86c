/* ingest_frames.c: turn one sample's raw stacks into symbolized frames,
 * root first: native user frames with the Python frames merged in where
 * they ran (mixedstack.c), then kernel frames on top, as flamegraphs draw
 * them.  Symbols are cached per kernel address and per (process, user
 * address); Python frames and asyncio tasks are named by ingest_pynames.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ingest.h"
#include "ingest_int.h"
#include "pyproc.h"
#include "log.h"
#include "mixedstack.h"
#include "pyruntime.h"
#include "symbolize.h"

#define EVAL_FRAME "_PyEval_EvalFrameDefault"
#define PYSTACK_CUT_FRAME "[python frames cut: stack too deep]"
#define PYSTACK_NOROOT_FRAME "[python outer frames missing]"

static int64_t kernel_frame(struct ingest *in, uint64_t ip, struct buf *name)
{
	uint32_t kind = FRAME_KERNEL;
	uint64_t v;
	int64_t id;

	if (hashmap_get(&in->kernel_frames, ip, &v))
		return (int64_t)v - 1;
	buf_reset(name);
	if (symbolizer_kernel(in->sym, ip, name, &kind) || !buf_cstr(name))
		return -ENOMEM;
	id = aggregate_frame(in->agg, kind, name->data);
	if (id >= 0)
		hashmap_put(&in->kernel_frames, ip, (uint64_t)id + 1);
	return id;
}


/* What a native frame is to the Python frames merged in (user_frames
 * values keep it in their top bits). */
enum {
	ROLE_EVAL = 1,	/* the eval loop: Python frames go here */
	ROLE_TRAMP = 2, /* a CPython perf trampoline (-X perf): anonymous code
			 * its perf map names "py::function:file" */
	ROLE_HOOK = 4,	/* py_trampoline_evaluator, which calls the trampolines */
	ROLE_GLUE = 8,	/* on a call's way into the eval loop, or nameless */
	ROLE_ANON = 16, /* anonymous code no map names yet */
};
#define ROLE_SHIFT 57
#define ROLE_BITS (31ull << ROLE_SHIFT)

/* CPython's call path from the eval loop into the next eval call: with
 * -X perf, a Python function calling another goes through it and the
 * trampoline, where without it the eval loop runs the callee itself. */
static const char *const py_call_path[] = {
    "PyObject_Vectorcall", "_PyObject_VectorcallTstate", "_PyFunction_Vectorcall",
    "_PyEval_Vector",	   "_PyEval_EvalFrame",
};

static uint8_t frame_role(const char *name, uint32_t kind, bool from_file)
{
	size_t i;

	if (!strcmp(name, EVAL_FRAME))
		return ROLE_EVAL;
	if (kind == FRAME_NATIVE && !from_file && !strncmp(name, "py::", 4))
		return ROLE_TRAMP;
	if (!strcmp(name, "py_trampoline_evaluator"))
		return ROLE_HOOK | ROLE_GLUE;
	if (kind == FRAME_UNKNOWN)
		return ROLE_GLUE | (!from_file && !strcmp(name, "[anon]") ? ROLE_ANON : 0);
	for (i = 0; i < sizeof(py_call_path) / sizeof(py_call_path[0]); i++)
		if (!strcmp(name, py_call_path[i]))
			return ROLE_GLUE;
	return 0;
}

static int64_t frame_of(uint64_t v, uint8_t *role)
{
	*role = (uint8_t)((v & ROLE_BITS) >> ROLE_SHIFT);
	return (int64_t)(v & ~ROLE_BITS) - 1;
}

/* Whether a frame no symbol names is in code a perf map may name later:
 * anonymous memory (named with prctl or not), or a file that is not ELF
 * (a memfd, a file-backed arena). */
static bool named_later(const struct procmap *map, uint32_t kind, const struct sym_module *mod,
			uint8_t role)
{
	if (!map || kind != FRAME_UNKNOWN || mod->from_file)
		return false;
	return (role & ROLE_ANON) || map->path[0] == '/' || !strncmp(map->path, "[anon:", 6);
}

/* A user frame's id, and whether it is the eval loop's (where Python
 * frames go): one lookup in the process's cache when seen before, else
 * one in the cache of its file (another process, or before a maps
 * reload, named it), else symbolized. */
static int64_t user_frame(struct ingest *in, struct proc *p, uint64_t ip, bool is_ret,
			  struct buf *name, uint64_t mono, bool *stable, uint8_t *role)
{
	uint64_t key = ip ^ (is_ret ? 1ull << 63 : 0), addr = is_ret && ip ? ip - 1 : ip, v;
	const struct procmap *map;
	uint32_t kind = FRAME_UNKNOWN;
	struct sym_module mod;
	bool mapped;
	int64_t id;

	if (hashmap_get(&p->ing->user_frames, key, &v))
		return frame_of(v, role);
	mapped = ingest_refresh_maps_for(in, p, ip, mono);
	*stable &= mapped;
	map = mapped ? procmaps_find(&p->maps, addr) : NULL;
	if (map && fileframes_get(&in->file_frames, map, addr, symbolizer_file_seq(in->sym, map),
				  &v)) {
		in->c.user_frames_by_file++;
		hashmap_put(&p->ing->user_frames, key, v);
		return frame_of(v, role);
	}
	buf_reset(name);
	if (symbolizer_user(in->sym, (int)p->pid, &p->maps, ip, is_ret, name, &kind, &mod) ||
	    !buf_cstr(name))
		return -ENOMEM;
	if (symbolizer_waiting(in->sym)) { /* named when the file is read */
		mapped = false;
		*stable = false;
		in->frames_wait = true;
	}
	in->c.user_frames++;
	if (kind == FRAME_UNKNOWN)
		in->c.user_frames_unknown++;
	id = aggregate_frame_in(in->agg, kind, name->data, mod.path, mod.build_id);
	*role = frame_role(name->data, kind, mod.from_file);
	/* Code a perf map may name later gets a frame of its own, which the
	 * map names when it comes, with the samples taken before it
	 * (ingest_jit.c).  Anonymous memory even while its map is being
	 * read: a sample that waits too long for the answer is counted
	 * with what it has.  A file not while it is being read (it may well
	 * be ELF, named from its symbols). */
	if (id >= 0 && named_later(map, kind, &mod, *role) &&
	    ((*role & ROLE_ANON) || !symbolizer_waiting(in->sym)))
		id = ingest_anon_frame(in, p, addr, kind, name->data, &mod, id);
	/* An address outside the maps is not cached: once a reload finds its
	 * mapping, the next sample gets the real name.  Nor is code no file
	 * names (JIT code in anonymous or memfd memory): its perf map may be
	 * written, or grow to name it, later (symbolize.c rereads it at most
	 * once a second while addresses miss it). */
	if (kind == FRAME_UNKNOWN && !mod.from_file)
		*stable = false; /* nor the stack it is in */
	else if (id >= 0 && mapped) {
		v = ((uint64_t)id + 1) | (uint64_t)*role << ROLE_SHIFT;
		hashmap_put(&p->ing->user_frames, key, v);
		if (map && mod.from_file)
			fileframes_put(&in->file_frames, map, addr,
				       symbolizer_file_seq(in->sym, map), v);
	}
	if (!in->frames_wait)
		ingest_anon_rename(in, p, name); /* the map read again: earlier frames named */
	return id;
}

/* The Python frames show what CPython's perf trampolines (-X perf) would
 * say: drop each trampoline frame, the hook that called it, and where the
 * way from the previous eval loop frame to it is CPython's call path
 * only (a Python function calling another), that too, so that the stack
 * reads as it does without -X perf; without Python frames the
 * trampolines' names are all there is, and stay.  Flags the eval frames
 * left in is_eval; returns how many frames are left. */
static uint32_t drop_trampolines(uint32_t *ids, const uint8_t *role, bool *is_eval, uint32_t n,
				 bool python)
{
	bool drop[PROFD_MAX_STACK_DEPTH + 1] = {false};
	uint32_t i, j, k, out = 0;

	for (i = 0; i < n && python; i++) {
		/* What the hook calls is a trampoline, named or not (-X
		 * perf_jit names them in a jitdump that CPython writes
		 * through a stdio buffer, on disk only as it fills), and so is
		 * anonymous code calling the eval loop itself (the hook
		 * nameless in a stripped interpreter). */
		if (!(role[i] & ROLE_TRAMP) && !(i > 0 && (role[i - 1] & ROLE_HOOK)) &&
		    !((role[i] & ROLE_ANON) && i + 1 < n && (role[i + 1] & ROLE_EVAL)))
			continue;
		drop[i] = true;
		for (j = i; j > 0 && (role[j - 1] & ROLE_GLUE); j--)
			;
		if (j > 0 && (role[j - 1] & ROLE_EVAL))
			for (k = j; k < i; k++)
				drop[k] = true;
		else if (i > 0 && (role[i - 1] & ROLE_HOOK))
			drop[i - 1] = true;
	}
	for (i = 0; i < n; i++) {
		if (drop[i])
			continue;
		is_eval[out] = role[i] & ROLE_EVAL;
		ids[out++] = ids[i];
	}
	return out;
}

static int64_t named(struct ingest *in, uint32_t kind, const char *name)
{
	return aggregate_frame(in->agg, kind, name);
}

/* Native user frames, root first, with their roles. */
static int native_frames(struct ingest *in, struct proc *p, const struct profd_sample *e,
			 const struct raw_stack *u, uint32_t *ids, uint8_t *role, uint32_t *n,
			 struct buf *name, bool *stable)
{
	int64_t id;
	int i;

	*n = 0;
	if (!u) {
		if (e->flags & PROFD_SAMPLE_KERNEL_THREAD)
			return 0;
		id = named(in, FRAME_UNKNOWN, e->ustack_id ? "[stack lost]" : "[user stack unavailable]");
		if (id < 0)
			return (int)id;
		role[*n] = 0;
		ids[(*n)++] = (uint32_t)id;
		return 0;
	}
	for (i = (int)u->nr - 1; i >= 0; i--) {
		id = user_frame(in, p, u->ips[i], i > 0, name, e->time_ns, stable, &role[*n]);
		if (id < 0)
			return (int)id;
		ids[(*n)++] = (uint32_t)id;
	}
	return 0;
}

/* Python frames, root first.  Raw pairs come leaf first. */
static int python_frames(struct ingest *in, struct proc *p, const struct raw_stack *py,
			 uint64_t mono, uint32_t *ids, bool *entry, uint32_t *n, int64_t *task,
			 bool *stable)
{
	int64_t id;
	int i, top;

	*n = 0;
	if (py && !p->ing->py->rt)
		*stable = false; /* named once the interpreter is known */
	if (!py || !p->ing->py->rt)
		return 0;
	top = (int)py->nr / 2 - 1;
	if (top >= 0 && (py_raw_frame(py, (uint32_t)top).flags & PROFD_PYFRAME_TASK)) {
		*task = ingest_task_frame(in, p, py->ips[2 * top], mono, stable);
		if (*task < 0)
			return (int)*task;
		top--;
	}
	for (i = top; i >= 0; i--) {
		struct py_raw_frame f = py_raw_frame(py, (uint32_t)i);

		id = ingest_python_frame(in, p, &f, mono, stable);
		if (id == -EAGAIN) {
			*stable = false;
			in->c.py_frames_unreadable++;
			id = named(in, FRAME_UNKNOWN, "[python frame unreadable]");
		}
		if (id < 0)
			return (int)id;
		entry[*n] = f.flags & PROFD_PYFRAME_ENTRY;
		ids[(*n)++] = (uint32_t)id;
	}
	return 0;
}

/* The Python walk kept the outermost frames of a deeper stack: say so
 * where the leaf side was cut, as a Python frame, so --python-only views
 * show it too. */
static int python_cut(struct ingest *in, const struct profd_sample *e, struct mixed_in *mi)
{
	int64_t id = named(in, FRAME_PYTHON, PYSTACK_CUT_FRAME);

	if (id < 0)
		return (int)id;
	mi->py_cut = true;
	/* A frame-pointer walk (before the unwind tables are loaded) through
	 * code built without them ends anywhere: no root to pair from; nor
	 * from Python frames without their own root. */
	mi->native_cut = e->flags & (PROFD_SAMPLE_USTACK_TRUNC | PROFD_SAMPLE_USTACK_FP |
				     PROFD_SAMPLE_PYSTACK_NOROOT);
	mi->cut_marker = (uint32_t)id;
	return 0;
}

/* The Python walk stopped before the outermost frame (an unreadable
 * frame): say so at the root side, as a group of its own. */
static int python_noroot(struct ingest *in, struct mixed_in *mi, uint32_t *pyids, bool *entry)
{
	int64_t id = named(in, FRAME_PYTHON, PYSTACK_NOROOT_FRAME);

	if (id < 0)
		return (int)id;
	memmove(pyids + 1, pyids, mi->npy * sizeof(*pyids));
	memmove(entry + 1, entry, mi->npy * sizeof(*entry));
	pyids[0] = (uint32_t)id;
	entry[0] = true;
	entry[1] = true;
	mi->npy++;
	return 0;
}

static int kernel_frames(struct ingest *in, const struct raw_stack *k, uint32_t *ids, uint32_t max,
			 uint32_t *n, struct buf *name)
{
	int64_t id;
	int i;

	if (!k)
		return 0;
	for (i = (int)k->nr - 1; i >= 0 && *n < max; i--) {
		id = kernel_frame(in, k->ips[i], name);
		if (id < 0)
			return (int)id;
		ids[(*n)++] = (uint32_t)id;
	}
	return 0;
}

int ingest_build_frames(struct ingest *in, struct proc *p, const struct profd_sample *e,
			const struct raw_stack *u, const struct raw_stack *k,
			const struct raw_stack *py, uint32_t *ids, uint32_t max, uint32_t *n,
			bool *stable)
{
	uint32_t nat[PROFD_MAX_STACK_DEPTH + 1], pyids[PROFD_MAX_PY_FRAMES + 1];
	bool is_eval[PROFD_MAX_STACK_DEPTH + 1], entry[PROFD_MAX_PY_FRAMES + 1];
	uint8_t role[PROFD_MAX_STACK_DEPTH + 1];
	struct mixed_in mi = {
	    .native = nat,
	    .is_eval = is_eval,
	    .py = pyids,
	    .py_entry = entry,
	};
	struct buf name;
	int64_t task = -1;
	int err;

	buf_init(&name);
	err = native_frames(in, p, e, u, nat, role, &mi.nnative, &name, stable);
	if (!err)
		err = python_frames(in, p, py, e->time_ns, pyids, entry, &mi.npy, &task, stable);
	if (!err)
		mi.nnative = drop_trampolines(nat, role, is_eval, mi.nnative, mi.npy > 0);
	if (!err && mi.npy && (e->flags & PROFD_SAMPLE_PYSTACK_NOROOT))
		err = python_noroot(in, &mi, pyids, entry);
	if (!err && mi.npy && (e->flags & PROFD_SAMPLE_PYSTACK_TRUNC))
		err = python_cut(in, e, &mi);
	if (!err) {
		/* The task at the root of the whole stack: --by-task groups
		 * by it, other dumps leave it out. */
		uint32_t first = task >= 0 && max > 0 ? 1 : 0;

		*n = mixed_merge(&mi, ids + first, max - first) + first;
		if (first)
			ids[0] = (uint32_t)task;
		err = kernel_frames(in, k, ids, max, n, &name);
	}
	buf_free(&name);
	return err;
}
