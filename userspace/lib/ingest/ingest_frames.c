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
#include "log.h"
#include "mixedstack.h"
#include "pyruntime.h"
#include "symbolize.h"

/* Re-reading the maps for an address outside them: soon after the last
 * read (the loader maps libraries right after exec), then backing off
 * while reloads do not help. */
#define MAPS_RELOAD_MIN_NS (10ull * 1000000ull)
#define MAPS_RELOAD_MAX_NS (1000ull * 1000000ull)
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

void ingest_request_maps(struct ingest *in, struct proc *p, uint64_t ip, uint64_t mono_ns)
{
	struct procmaps fresh = { 0 };
	int err;

	if (p->maps_pending || p->exited || p->start_time == 0)
		return;
	in->c.maps_reloads++;
	in->c.requests++;
	p->maps_pending = true;
	p->maps_req++;
	p->maps_want_ip = ip;
	p->maps_mono_ns = mono_ns;
	if (in->be.maps) {
		in->be.maps(in->be.ctx, p->pid, p->start_time, p->maps_req);
		return;
	}
	err = procmaps_read_at(in->pt->proc_root, (int)p->pid, &fresh);
	ingest_maps_found(in, p->pid, p->start_time, p->maps_req, err, &fresh);
}

static void recheck_asyncio(struct ingest *in, struct proc *p);

void ingest_maps_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req, int err,
		       struct procmaps *m)
{
	struct proc *p = proctable_find_live(in->pt, pid);
	bool found;

	if (!p || p->start_time != start_time || p->maps_req != req || !p->maps_pending) {
		procmaps_free(m); /* exec'ed, asked again, or gone since */
		return;
	}
	p->maps_pending = false;
	if (err)
		return; /* the address stays unnamed; asked again after the gap */
	proctable_set_maps(in->pt, p, m);
	if (!p->ing->py)
		p->ing->py_checked = false; /* new mappings may be libpython */
	recheck_asyncio(in, p);
	found = !p->maps_want_ip || procmaps_find(&p->maps, p->maps_want_ip);
	if (found) {
		p->maps_reload_gap_ns = MAPS_RELOAD_MIN_NS;
		return;
	}
	p->maps_reload_gap_ns = p->maps_reload_gap_ns ? p->maps_reload_gap_ns * 2 : MAPS_RELOAD_MIN_NS;
	if (p->maps_reload_gap_ns > MAPS_RELOAD_MAX_NS)
		p->maps_reload_gap_ns = MAPS_RELOAD_MAX_NS;
}

bool ingest_waits_for_maps(const struct proc *p, const struct profd_sample *e)
{
	return p->maps_pending && e->ustack_id;
}

/* Is ip inside the process's mappings?  If not, the maps are stale
 * (dlopen, the loader still at work when the exec was seen): have them
 * read again (rate-limited with backoff: a stray address must not cost a
 * read per sample).  Returns whether ip is mapped now. */
static bool refresh_maps_for(struct ingest *in, struct proc *p, uint64_t ip, uint64_t mono)
{
	if (p->maps_loaded && procmaps_find(&p->maps, ip))
		return true;
	if (p->maps_loaded && mono < p->maps_mono_ns + p->maps_reload_gap_ns)
		return false;
	ingest_request_maps(in, p, ip, mono);
	return p->maps_loaded && procmaps_find(&p->maps, ip); /* read inline (tests) */
}

#define EVAL_BIT (1ull << 62) /* in user_frames values: an eval-loop frame */

static int64_t frame_of(uint64_t v, bool *is_eval)
{
	*is_eval = v & EVAL_BIT;
	return (int64_t)(v & ~EVAL_BIT) - 1;
}

/* A user frame's id, and whether it is the eval loop's (where Python
 * frames go): one lookup in the process's cache when seen before, else
 * one in the cache of its file (another process, or before a maps
 * reload, named it), else symbolized. */
static int64_t user_frame(struct ingest *in, struct proc *p, uint64_t ip, bool is_ret,
			  struct buf *name, uint64_t mono, bool *stable, bool *is_eval)
{
	uint64_t key = ip ^ (is_ret ? 1ull << 63 : 0), addr = is_ret && ip ? ip - 1 : ip, v;
	const struct procmap *map;
	uint32_t kind = FRAME_UNKNOWN;
	struct sym_module mod;
	bool mapped;
	int64_t id;

	if (hashmap_get(&p->ing->user_frames, key, &v))
		return frame_of(v, is_eval);
	mapped = refresh_maps_for(in, p, ip, mono);
	*stable &= mapped;
	map = mapped ? procmaps_find(&p->maps, addr) : NULL;
	if (map && fileframes_get(&in->file_frames, map, addr, symbolizer_file_seq(in->sym, map),
				  &v)) {
		in->c.user_frames_by_file++;
		hashmap_put(&p->ing->user_frames, key, v);
		return frame_of(v, is_eval);
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
	*is_eval = strcmp(name->data, EVAL_FRAME) == 0;
	/* An address outside the maps is not cached: once a reload finds its
	 * mapping, the next sample gets the real name. */
	if (id >= 0 && mapped) {
		v = ((uint64_t)id + 1) | (*is_eval ? EVAL_BIT : 0);
		hashmap_put(&p->ing->user_frames, key, v);
		if (map && mod.from_file)
			fileframes_put(&in->file_frames, map, addr,
				       symbolizer_file_seq(in->sym, map), v);
	}
	return id;
}

static int64_t named(struct ingest *in, uint32_t kind, const char *name)
{
	return aggregate_frame(in->agg, kind, name);
}

/* Native user frames, root first, with eval-loop frames flagged. */
static int native_frames(struct ingest *in, struct proc *p, const struct profd_sample *e,
			 const struct raw_stack *u, uint32_t *ids, bool *is_eval, uint32_t *n,
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
		is_eval[*n] = false;
		ids[(*n)++] = (uint32_t)id;
		return 0;
	}
	for (i = (int)u->nr - 1; i >= 0; i--) {
		id = user_frame(in, p, u->ips[i], i > 0, name, e->time_ns, stable, &is_eval[*n]);
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
	if (py && !p->ing->py)
		*stable = false; /* named once the interpreter is known */
	if (!py || !p->ing->py)
		return 0;
	top = (int)py->nr / 2 - 1;
	if (top >= 0 && ((py->ips[2 * top + 1] >> 32) & PROFD_PYFRAME_TASK)) {
		*task = ingest_task_frame(in, p, py->ips[2 * top], mono, stable);
		if (*task < 0)
			return (int)*task;
		top--;
	}
	for (i = top; i >= 0; i--) {
		uint64_t code = py->ips[2 * i], word = py->ips[2 * i + 1];

		id = ingest_python_frame(in, p, code, (int32_t)(uint32_t)word, mono, stable);
		if (id == -EAGAIN) {
			*stable = false;
			in->c.py_frames_unreadable++;
			id = named(in, FRAME_UNKNOWN, "[python frame unreadable]");
		}
		if (id < 0)
			return (int)id;
		entry[*n] = (word >> 32) & PROFD_PYFRAME_ENTRY;
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
	err = native_frames(in, p, e, u, nat, is_eval, &mi.nnative, &name, stable);
	if (!err)
		err = python_frames(in, p, py, e->time_ns, pyids, entry, &mi.npy, &task, stable);
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

void ingest_detect_python_now(struct ingest *in, struct proc *p, uint64_t mono_ns,
			      bool here)
{
	p->ing->py_checked = true;
	p->ing->py_checked_mono_ns = mono_ns;
	if (p->ing->py || p->ing->py_pending || p->exited || p->start_time == 0)
		return;
	p->ing->py_req++;
	p->ing->py_pending = true;
	in->c.requests++;
	if (here || !in->be.py_detect)
		ingest_python_found(in, p->pid, p->start_time, p->ing->py_req,
				    pyruntime_find((int)p->pid));
	else
		in->be.py_detect(in->be.ctx, p->pid, p->start_time, p->ing->py_req);
}

void ingest_detect_python(struct ingest *in, struct proc *p, uint64_t mono_ns)
{
	ingest_detect_python_now(in, p, mono_ns, false);
}

/* Hand p's interpreter to BPF (again when asyncio's offsets came later;
 * the eval uprobe, module set, is attached the first time only). */
static void publish_python(struct ingest *in, struct proc *p, const char *module)
{
	const struct pyruntime *rt = p->ing->py;
	struct profd_py_proc pp;

	memset(&pp, 0, sizeof(pp));
	pp.runtime_addr = rt->runtime_addr;
	pp.off = rt->off;
	pp.asyncio_task_off = rt->async.known ? rt->async.dbg.tstate.running_task : 0;
	if (in->be.py_add && in->be.py_add(in->be.ctx, p->pid, &pp, module))
		log_warn("python: pid %u: could not enable Python frames", p->pid);
}

/* A 3.14 process whose maps now hold _asyncio (imported after the
 * interpreter was found): look again, on the worker, for its offsets. */
static void recheck_asyncio(struct ingest *in, struct proc *p)
{
	size_t i;

	if (!p->ing->py || p->ing->py->minor < 14 || p->ing->py->async.known || p->ing->py_pending || p->exited)
		return;
	for (i = 0; i < p->maps.n; i++) {
		const char *path = p->maps.maps[i].path, *base = path ? strrchr(path, '/') : NULL;

		if (base && !strncmp(base + 1, "_asyncio.", 9))
			break;
	}
	if (i == p->maps.n)
		return;
	p->ing->py_req++;
	p->ing->py_pending = true;
	in->c.requests++;
	if (in->be.py_detect)
		in->be.py_detect(in->be.ctx, p->pid, p->start_time, p->ing->py_req);
	else
		ingest_python_found(in, p->pid, p->start_time, p->ing->py_req, pyruntime_find((int)p->pid));
}

/* The answer to a recheck: only asyncio's offsets are taken from it. */
static void asyncio_found(struct ingest *in, struct proc *p, struct pyruntime *rt)
{
	if (rt && rt->async.known && !p->ing->py->async.known) {
		p->ing->py->async = rt->async;
		publish_python(in, p, NULL);
		log_info("python: pid %u: asyncio tasks known", p->pid);
	}
	free(rt);
}

void ingest_python_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req,
			 struct pyruntime *rt)
{
	struct proc *p = proctable_find_live(in->pt, pid);

	if (!p || p->start_time != start_time || !p->ing->py_pending || p->ing->py_req != req) {
		free(rt); /* exec'ed, asked again, or gone since it was asked */
		return;
	}
	p->ing->py_pending = false;
	if (p->ing->py) {
		asyncio_found(in, p, rt);
		return;
	}
	if (!rt)
		return;
	p->ing->py = rt;
	hashmap_free(&p->ing->stack_memo); /* stacks seen before now get Python names */
	in->c.py_processes++;
	publish_python(in, p, rt->path);
	log_info("python: pid %u runs CPython %d.%d (%s)", p->pid, rt->major, rt->minor, rt->path);
}

int ingest_event_frames(struct ingest *in, struct proc *p, const struct profd_sample *s,
			bool final, uint32_t *ids, uint32_t max, uint32_t *n)
{
	const struct raw_stack *u, *k, *py;
	bool stable = true, lost;
	int err;

	in->frames_wait = false;
	lost = !ingest_sample_stacks(in, s, &k, &u, &py);
	ingest_keep_unwind_tables(in, p, s);
	err = ingest_build_frames(in, p, s, u, k, py, ids, max, n, &stable);
	if (err)
		return err;
	/* As for samples: maps or a file's symbols still being read on the
	 * worker are waited for until the batch end, not named by offset. */
	if (!stable && !final && (in->frames_wait || ingest_waits_for_maps(p, s)))
		return -EAGAIN;
	if (lost)
		in->c.stack_lost++;
	return 0;
}

struct proc *ingest_event_proc(struct ingest *in, const struct profd_sample *s, char *comm,
			       const char raw_comm[PROFD_COMM_LEN])
{
	struct proc *p;

	memcpy(comm, raw_comm, PROFD_COMM_LEN);
	comm[PROFD_COMM_LEN] = '\0';
	p = ingest_sample_proc(in, s, comm);
	if (!p) {
		in->c.dropped_noproc++;
		return NULL;
	}
	if (!p->ing->py_checked)
		ingest_detect_python(in, p, s->time_ns);
	return p;
}

int ingest_count_weight(struct ingest *in, struct proc *p, int type, const uint32_t *ids,
			uint32_t n, const struct profd_sample *s, const char *comm, uint64_t weight)
{
	int64_t idx = aggregate_stack(in->agg, p, ids, n);

	if (idx < 0 || aggregate_add(in->agg, p, type, (uint32_t)idx, s->tid, comm,
				     ingest_realtime(in, s->time_ns), weight)) {
		in->c.dropped_nomem++;
		return -ENOMEM;
	}
	return 0;
}
