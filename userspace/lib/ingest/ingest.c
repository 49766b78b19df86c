/* ingest.c: the stage's entry point: ring events dispatched, stack records
 * kept by ID, CPU samples counted through the per-process memo or
 * symbolized, events that wait for a stack retried at the batch end, and
 * processes' lives (identity, fork, exec, exit, the sweep). */
#include "ingest.h"
#include "ingest_int.h"
#include "pyproc.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "identity.h"
#include "log.h"
#include "pycode.h"
#include "symbolize.h"

#define RAW_CACHE_MAX 32768
#define PENDING_MAX 4096
/* User frames named by (file, offset), for every process: a few MB at most
 * (fileframes.h counts each file's own tables too). */
#define FILE_FRAMES_MAX 131072
/* An event waiting for the worker (its process's maps, a file's symbols)
 * of a live process is kept up to this long (two batch ends can come a few
 * ms apart), then named as well as it can be.  A GPU event waits longer:
 * a launch's kernel is named from its stub's symbol, and a small library's
 * symbols took over 300 ms in an arm64 guest under TCG while the worker
 * read a python's debug file ("kernel [libkernels.so+0x570]" for the
 * first launches).  Not the others: any file being read holds a waiting
 * event, and on a machine starting processes one always is (off-CPU
 * recordings ended 2 s later).  PENDING_MAX bounds what waits. */
#define PENDING_HOLD_NS 300000000ull
#define PENDING_HOLD_GPU_NS 2000000000ull
#define MEMO_MAX 65536 /* per process; a full memo starts over */

void ingest_sync_clock(struct ingest *in)
{
	in->realtime_offset_ns = (int64_t)(clock_realtime_ns() - clock_mono_ns());
}

uint64_t ingest_realtime(const struct ingest *in, uint64_t mono_ns)
{
	return (uint64_t)((int64_t)mono_ns + in->realtime_offset_ns);
}

int ingest_init(struct ingest *in, const struct ingest_backend *be, struct symbolizer *sym,
		struct proctable *pt, struct aggregate *agg)
{
	memset(in, 0, sizeof(*in));
	in->be = *be;
	in->sym = sym;
	in->pt = pt;
	in->agg = agg;
	in->raw_max = RAW_CACHE_MAX;
	in->raw_gen = 1; /* BPF's stack_gen starts there */
	fileframes_init(&in->file_frames, FILE_FRAMES_MAX);
	in->pyc = pycode_cache_new();
	in->pending = malloc(PENDING_MAX * sizeof(*in->pending));
	if (!in->pyc || !in->pending || ingest_own_procs(pt)) {
		pycode_cache_free(in->pyc);
		free(in->pending);
		return -ENOMEM;
	}
	ingest_sync_clock(in);
	return 0;
}

static void free_raw(struct hashmap *m)
{
	uint64_t v;
	size_t it = 0;

	while (hashmap_next(m, &it, NULL, &v))
		free((void *)(uintptr_t)v);
	hashmap_free(m);
}

void ingest_free(struct ingest *in)
{
	free_raw(&in->raw[0]);
	free_raw(&in->raw[1]);
	hashmap_free(&in->kernel_frames);
	fileframes_free(&in->file_frames);
	ingest_anon_pool_free(in);
	pycode_cache_free(in->pyc);
	in->pyc = NULL;
	free(in->pending);
	in->pending = NULL;
}

const struct raw_stack *ingest_resolve_stack(struct ingest *in, uint64_t id, uint32_t kind)
{
	const struct raw_stack *r = NULL;
	uint64_t v;

	if (hashmap_get(&in->raw[0], id, &v) || hashmap_get(&in->raw[1], id, &v))
		r = (const struct raw_stack *)(uintptr_t)v;
	if (r && r->kind != kind)
		return NULL; /* a 64-bit hash collision across kinds: refuse */
	return r;
}

bool ingest_sample_stacks(struct ingest *in, const struct profd_sample *e,
			  const struct raw_stack **k, const struct raw_stack **u,
			  const struct raw_stack **py)
{
	*k = e->kstack_id ? ingest_resolve_stack(in, e->kstack_id, PROFD_STACK_KERNEL) : NULL;
	*u = e->ustack_id ? ingest_resolve_stack(in, e->ustack_id, PROFD_STACK_USER) : NULL;
	*py = e->pystack_id ? ingest_resolve_stack(in, e->pystack_id, PROFD_STACK_PYTHON) : NULL;
	return !((e->kstack_id && !*k) || (e->ustack_id && !*u) || (e->pystack_id && !*py));
}

/* The newer generation is full: drop the older and tell BPF, which then
 * sends again every stack it sees that is not in the newer one. */
static void raw_rotate(struct ingest *in)
{
	free_raw(&in->raw[1]);
	in->raw[1] = in->raw[0];
	hashmap_init(&in->raw[0]);
	in->raw_gen++;
	in->c.stack_gens++;
	if (in->be.stack_gen)
		in->be.stack_gen(in->be.ctx, in->raw_gen);
}

/* A stack record: keep the frames under its ID, in the newer generation
 * (a stack sent again after a rotation moves up from the older one). */
static void on_stack(struct ingest *in, const void *data, size_t len)
{
	struct profd_stack hdr;
	struct raw_stack *r;
	uint32_t max;
	uint64_t v;

	memcpy(&hdr, data, PROFD_STACK_HDR_BYTES);
	/* Only Python stacks use the whole array (pairs of words). */
	max = hdr.kind == PROFD_STACK_PYTHON ? PROFD_STACK_WORDS : PROFD_MAX_STACK_DEPTH;
	if (hdr.nr > max || len < PROFD_STACK_REC_BYTES((size_t)hdr.nr) || !hdr.id) {
		in->c.bad_events++;
		return;
	}
	in->c.stack_records++;
	if (hashmap_get(&in->raw[0], hdr.id, NULL))
		return;
	if (hashmap_get(&in->raw[1], hdr.id, &v)) {
		hashmap_del(&in->raw[1], hdr.id);
		r = (struct raw_stack *)(uintptr_t)v;
	} else {
		r = malloc(sizeof(*r) + hdr.nr * sizeof(uint64_t));
		if (!r)
			return; /* its samples count as "[stack lost]" */
		r->kind = hdr.kind;
		r->nr = hdr.nr;
		memcpy(r->ips, (const char *)data + PROFD_STACK_HDR_BYTES, hdr.nr * sizeof(uint64_t));
	}
	if (hashmap_put(&in->raw[0], hdr.id, (uint64_t)(uintptr_t)r)) {
		free(r);
		return;
	}
	if (r->kind == PROFD_STACK_PYTHON)
		ingest_python_prefetch(in, hdr.tgid, r);
	if (in->raw[0].len >= in->raw_max)
		raw_rotate(in);
}

size_t ingest_samples_pending(const struct ingest *in)
{
	size_t i, n = 0;

	for (i = 0; i < in->npending; i++)
		n += in->pending[i].ev.sample.type == PROFD_EV_SAMPLE;
	return n;
}

static void forget(struct ingest *in, uint32_t pid);
static void end_proc(struct ingest *in, uint32_t pid, uint64_t mono_ns);

#define UNWIND_REFRESH_MIN_NS (250ull * 1000000ull) /* per process */

static void proc_event(struct ingest *in, uint32_t pid, enum ingest_proc_event what)
{
	in->c.requests++;
	if (in->be.proc_event)
		in->be.proc_event(in->be.ctx, pid, what);
}

void ingest_unwind_requested(struct proc *p)
{
	p->ing->unwind_added = true;
	p->ing->unwind_refresh_mono_ns = 0;
}

/* Native unwind tables: requested for a process on first sight, refreshed
 * (rate-limited) when a walk ran into code it had no table for. */
void ingest_keep_unwind_tables(struct ingest *in, struct proc *p, const struct profd_sample *e)
{
	if (e->flags & PROFD_SAMPLE_USTACK_FP)
		in->c.ustack_fp++;
	if (p->exited || p->start_time == 0)
		return;
	if (!p->ing->unwind_added) {
		ingest_unwind_requested(p);
		proc_event(in, p->pid, INGEST_PROC_NEW);
	} else if ((e->flags & PROFD_SAMPLE_USTACK_UNKNOWN) &&
		   e->time_ns - p->ing->unwind_refresh_mono_ns >= UNWIND_REFRESH_MIN_NS) {
		p->ing->unwind_refresh_mono_ns = e->time_ns;
		in->c.unwind_refreshes++;
		proc_event(in, p->pid, INGEST_PROC_REFRESH);
	}
}

static void copy_comm(char dst[PROFD_COMM_LEN + 1], const char src[PROFD_COMM_LEN])
{
	memcpy(dst, src, PROFD_COMM_LEN);
	dst[PROFD_COMM_LEN] = '\0';
}

/* Sample flags that change how the same raw stacks merge (mixedstack:
 * where Python frames were cut, whether the native root can be trusted). */
#define MEMO_FLAGS                                                                                 \
	(PROFD_SAMPLE_KERNEL_THREAD | PROFD_SAMPLE_PYSTACK_TRUNC | PROFD_SAMPLE_PYSTACK_NOROOT |   \
	 PROFD_SAMPLE_USTACK_TRUNC | PROFD_SAMPLE_USTACK_FP)

/* The raw identity of a sample's stack in its process. */
static uint64_t memo_key(const struct profd_sample *e)
{
	uint64_t h = hash64_mix(e->pystack_id ^ (e->flags & MEMO_FLAGS));

	h = hash64_mix(e->ustack_id ^ h);
	return hash64_mix(e->kstack_id ^ h);
}

/* Symbolize a sample seen for the first time in its process (or a Python
 * stack due for its check), and remember where it was counted. */
static int64_t symbolize_sample(struct ingest *in, struct proc *p, const struct profd_sample *e,
				uint64_t key, bool final)
{
	const struct raw_stack *u, *k, *py;
	uint32_t ids[INGEST_MAX_FRAMES], n;
	bool stable = true;
	int64_t idx;

	in->frames_wait = false;
	if (!ingest_sample_stacks(in, e, &k, &u, &py)) {
		if (!final)
			return -EAGAIN;
		in->c.stack_lost++;
		stable = false;
	}
	if (ingest_build_frames(in, p, e, u, k, py, ids, INGEST_MAX_FRAMES, &n, &stable))
		return -ENOMEM;
	/* An address outside the maps while they are being read (a new
	 * process, a dlopen), or in a file whose symbols are being read:
	 * named when they come, at the batch end. */
	if (!stable && !final && (in->frames_wait || ingest_waits_for_maps(p, e)))
		return -EAGAIN;
	in->c.symbolized++;
	idx = aggregate_stack(in->agg, p, ids, n);
	if (idx >= 0)
		ingest_comm_note(in, p, (uint32_t)idx, ids, n);
	if (idx >= 0 && stable) {
		uint64_t epoch = e->pystack_id ? e->time_ns >> INGEST_PY_RECHECK_SHIFT : 0;

		if (p->ing->stack_memo.len >= MEMO_MAX)
			hashmap_free(&p->ing->stack_memo);
		hashmap_put(&p->ing->stack_memo, key, (uint64_t)idx + 1 + (epoch << 32));
	}
	return idx;
}

/* The fast path: the stack index of a sample whose raw stacks this
 * process has had before, in one lookup; else symbolize it. */
static int64_t stack_index(struct ingest *in, struct proc *p, const struct profd_sample *e,
			   bool final)
{
	uint64_t key = memo_key(e), v, epoch = e->time_ns >> INGEST_PY_RECHECK_SHIFT;

	if (!hashmap_get(&p->ing->stack_memo, key, &v))
		return symbolize_sample(in, p, e, key, final);
	/* A Python stack is checked once an epoch: its code objects' names,
	 * without building the rest of it again. */
	if (e->pystack_id && (v >> 32) != (uint32_t)epoch) {
		bool checked;

		if (!ingest_python_names_same(in, p, e->pystack_id, e->time_ns, &checked))
			return symbolize_sample(in, p, e, key, final);
		if (checked) {
			v = (uint32_t)v | (epoch << 32);
			hashmap_put(&p->ing->stack_memo, key, v);
		}
	}
	in->c.memo_hits++;
	return (int64_t)(uint32_t)v - 1;
}

/* Keep an event for the end of the batch; false when there is no room
 * (the caller counts it now). */
static bool defer(struct ingest *in, const void *ev, size_t len)
{
	struct ingest_pending *pe;

	if (in->npending >= PENDING_MAX || len > sizeof(pe->ev))
		return false;
	pe = &in->pending[in->npending++];
	memcpy(&pe->ev, ev, len);
	pe->tries = 0;
	pe->since_ns = clock_mono_ns();
	pe->waits_file = in->frames_wait;
	in->c.deferred++;
	return true;
}

/* /proc/PID/stat's starttime: ns since boot in USER_HZ clock ticks. */
static uint64_t start_ticks(uint64_t start_ns)
{
	static uint64_t ns_per_tick;

	if (!ns_per_tick) {
		long hz = sysconf(_SC_CLK_TCK);

		ns_per_tick = 1000000000ull / (uint64_t)(hz > 0 ? hz : 100);
	}
	return start_ns / ns_per_tick;
}

/* The live entry of the process (pid, start_ns), if any, by its start time
 * and without a look into /proc.  A live entry older than that process lost
 * its exit event (dropped, or not read yet while the pid was reused): it is
 * ended here, so two programs never merge.  *older: the event belongs to
 * an earlier process with this pid than the live one. */
static struct proc *live_proc(struct ingest *in, uint32_t pid, uint64_t start_ns,
			      uint64_t mono_ns, bool *older)
{
	uint64_t start = start_ns ? start_ticks(start_ns) : 0;
	struct proc *p = proctable_find_live(in->pt, pid);

	*older = false;
	if (!p || !start || !p->start_time || p->start_time == start)
		return p;
	if (start < p->start_time) {
		*older = true;
		return NULL;
	}
	in->c.proc_exits_repaired++;
	end_proc(in, pid, mono_ns);
	return NULL;
}

/* Have p's uid and exe read: on the worker when the daemon has one (a
 * few /proc reads must not sit between samples and their counters). */
static void ask_identity(struct ingest *in, struct proc *p)
{
	struct ingest_identity id = { 0 };
	char comm[16];

	p->identity_pending = true;
	p->identity_req++;
	if (in->be.identify) {
		in->be.identify(in->be.ctx, p->pid, p->start_time, p->identity_req);
		return;
	}
	id.err = proc_read_identity(in->pt->proc_root, p->pid, &id.read_start, &id.uid, &id.ppid, comm,
				    &id.exe);
	ingest_identity_found(in, p->pid, p->start_time, p->identity_req, &id);
}

/* The same for a process new to us (the daemon watches the rings closely
 * for a while after such requests). */
static void request_identity(struct ingest *in, struct proc *p)
{
	in->c.requests++;
	ask_identity(in, p);
	if (!p->exited) /* an inline answer may have ended it */
		ingest_ask_workload(in, p, clock_mono_ns());
}

/* The live entry of pid, or a new one for the process that started at
 * start_ns (with no look into /proc when that is known). */
static struct proc *live_or_new(struct ingest *in, uint32_t pid, uint64_t start_ns,
				const char *comm)
{
	struct proc *p = proctable_find_live(in->pt, pid);

	if (p || !start_ns)
		return p ? p : proctable_get(in->pt, pid, comm);
	p = proctable_add(in->pt, pid, start_ticks(start_ns), comm);
	if (p) {
		request_identity(in, p);
		ingest_request_maps(in, p, 0, clock_mono_ns());
	}
	return p;
}

void ingest_identity_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req,
			   struct ingest_identity *id)
{
	struct proc *p = proctable_find_live(in->pt, pid);

	if (!p || p->start_time != start_time || p->identity_req != req) {
		free(id->exe); /* ended, exec'ed or asked again since */
		return;
	}
	in->c.identities++;
	if (id->err == -ESRCH || (!id->err && id->read_start != start_time)) {
		free(id->exe); /* gone, or the pid is another process already */
		in->c.proc_exits_repaired++;
		end_proc(in, pid, clock_mono_ns());
		return;
	}
	if (id->err) {
		p->identity_pending = false; /* unreadable: uid stays unknown */
		return;
	}
	proctable_set_identity(p, id->uid, id->exe);
	if (p->wid)
		identity_derive(p->wid, NULL, p->exe ? p->exe : ""); /* its exe, at last */
	if (id->ppid && !p->ppid)
		p->ppid = id->ppid; /* the exec event's is the one at exec */
}

/* The process a sample belongs to: the live one, a late sample's exited
 * one, or a new entry. */
struct proc *ingest_sample_proc(struct ingest *in, const struct profd_sample *e,
				const char *comm)
{
	bool older;
	struct proc *p = live_proc(in, e->pid, e->start_ns, e->time_ns, &older);

	if (!p && e->start_ns) /* a late sample of an exited one, known by its start */
		p = proctable_find_exited(in->pt, e->pid, start_ticks(e->start_ns));
	if (p || older)
		return p;
	return live_or_new(in, e->pid, e->start_ns, comm);
}

/* final: a retry at the end of the batch, when a stack record that has
 * still not come never will. */
/* Count a sample; -EAGAIN when it must wait for the worker or its stack
 * record (unless final): a fresh one (!retried) is then deferred here. */
static int on_sample(struct ingest *in, const struct profd_sample *e, bool retried, bool final)
{
	char comm[PROFD_COMM_LEN + 1];
	struct proc *p;
	uint64_t when;
	int64_t idx;

	if (!retried) {
		in->c.samples++;
		if (!in->c.first_sample_mono_ns)
			in->c.first_sample_mono_ns = e->time_ns;
	}
	copy_comm(comm, e->comm);
	p = ingest_sample_proc(in, e, comm);
	if (!p) {
		in->c.dropped_noproc++;
		return 0;
	}
	if (!p->ing->py->checked)
		ingest_detect_python(in, p, e->time_ns);
	ingest_keep_unwind_tables(in, p, e);
	idx = stack_index(in, p, e, final || in->npending >= PENDING_MAX);
	if (idx == -EAGAIN) { /* not final: the pending list has room */
		if (!retried)
			defer(in, e, sizeof(*e));
		return -EAGAIN;
	}
	if (e->pystack_id)
		in->c.py_samples++;
	when = ingest_realtime(in, e->time_ns);
	if (idx < 0 || aggregate_count(in->agg, p, (uint32_t)idx, e->tid, comm, when, 1))
		goto nomem;
	ingest_comm_count(in, p, (uint32_t)idx, e->tid, comm, when, in->comm_sample_ns);
	/* The gil profile: the same sample again when its thread held the GIL. */
	if ((e->flags & PROFD_SAMPLE_HOLDS_GIL) &&
	    aggregate_add(in->agg, p, AGG_GIL, (uint32_t)idx, e->tid, comm, when, 1))
		goto nomem;
	in->c.aggregated++;
	return 0;
nomem:
	in->c.dropped_nomem++;
	return 0;
}

/* One deferred event again: counted now if final, else kept (0) or
 * still waiting (-EAGAIN). */
static int retry(struct ingest *in, struct ingest_pending *pe, bool final)
{
	const struct raw_stack *k, *u, *py;

	const struct profd_sample *e = &pe->ev.sample;
	struct proc *p;

	/* A file whose symbols it waits for is still being read. */
	if (!final && pe->waits_file && symbolizer_loading(in->sym))
		return -EAGAIN;
	if (e->type == PROFD_EV_GPU)
		return ingest_gpu_event(in, &pe->ev.gpu, sizeof(pe->ev.gpu), final);
	if (e->type == PROFD_EV_OFFCPU)
		return ingest_offcpu_event(in, &pe->ev.offcpu, sizeof(pe->ev.offcpu), final);
	if (e->type == PROFD_EV_MEMORY || e->type == PROFD_EV_MMAP)
		return ingest_memory_event(in, &pe->ev.memory, sizeof(pe->ev.memory), final);
	if (!final && !ingest_sample_stacks(in, e, &k, &u, &py))
		return -EAGAIN;
	p = proctable_find_live(in->pt, e->pid);
	if (!final && p && (!e->start_ns || p->start_time == start_ticks(e->start_ns)) &&
	    ingest_waits_for_maps(p, e))
		return -EAGAIN;
	return on_sample(in, e, true, final);
}

/* Whether pe waits for an answer from the worker: a file's symbols or a
 * Python name, or its process's maps (every event type starts with type and pid). */
static bool waits_for_worker(struct ingest *in, const struct ingest_pending *pe)
{
	const struct proc *p = proctable_find_live(in->pt, pe->ev.sample.pid);
	const struct profd_sample *e = &pe->ev.sample;

	/* Gone (an exec storm): named now, but for Python names asked while
	 * it lived (its forget makes the worker answer them at once). */
	if (!p && e->type == PROFD_EV_SAMPLE && e->start_ns) {
		p = proctable_find_exited(in->pt, e->pid, start_ticks(e->start_ns));
		return p && pe->waits_file && p->ing->py->asks_pending;
	}
	if (!p)
		return false;
	if (pe->waits_file && (symbolizer_loading(in->sym) || p->ing->py->asks_pending))
		return true;
	/* A CPU sample does not wait longer for maps (a new process's first
	 * samples, every exec of a storm); rarer events (GPU, off-CPU, memory)
	 * do. */
	return pe->ev.sample.type != PROFD_EV_SAMPLE && p->maps_pending;
}

static uint64_t hold_ns(const struct ingest_pending *pe)
{
	return pe->ev.sample.type == PROFD_EV_GPU ? PENDING_HOLD_GPU_NS : PENDING_HOLD_NS;
}

void ingest_end_batch(struct ingest *in)
{
	size_t i, n = in->npending, kept = 0;
	uint64_t now = clock_mono_ns();

	for (i = 0; i < n; i++) {
		struct ingest_pending *pe = &in->pending[i];

		pe->tries++;
		in->frames_wait = false;
		if (retry(in, pe, false) != -EAGAIN)
			continue;
		/* What it waits for now: its maps may have come and a file's
		 * symbols be asked for only in this try. */
		pe->waits_file = pe->waits_file || in->frames_wait;
		if (pe->tries >= 2 && (now - pe->since_ns >= hold_ns(pe) || !waits_for_worker(in, pe))) {
			retry(in, pe, true); /* named as well as it can be now */
			continue;
		}
		in->pending[kept++] = *pe;
	}
	in->npending = kept;
	ingest_kernels_end_batch(in);
}

static void forget(struct ingest *in, uint32_t pid)
{
	symbolizer_forget_pid(in->sym, (int)pid);
	pycode_cache_forget_pid(in->pyc, (int)pid);
	if (in->be.py_del)
		in->be.py_del(in->be.ctx, pid);
}

/* The live process pid has ended. */
static void end_proc(struct ingest *in, uint32_t pid, uint64_t mono_ns)
{
	struct proc *p = proctable_find_live(in->pt, pid);

	if (p)
		ingest_kernels_exit(in, p);
	forget(in, pid);
	proctable_exit(in->pt, pid, ingest_realtime(in, mono_ns));
	proc_event(in, pid, INGEST_PROC_EXIT);
}

/* A forked child runs its parent's program in a copy of its memory: its
 * maps, uid, exe and Python runtime are the parent's (BPF copied the
 * Python walker's entry already), so its first samples are named without
 * waiting for /proc; a later exec replaces all of it. */
static void inherit(struct ingest *in, struct proc *p, const struct proc *parent, uint64_t mono_ns)
{
	struct procmaps copy;

	if (!p->maps_loaded && parent->maps_loaded && !procmaps_copy(&copy, &parent->maps)) {
		proctable_set_maps(in->pt, p, &copy);
		p->maps_mono_ns = mono_ns;
		in->c.forks_inherited++;
	}
	if (p->identity_pending && !parent->identity_pending)
		proctable_set_identity(p, parent->uid, parent->exe ? strdup(parent->exe) : NULL);
	ingest_inherit_workload(p, parent);
	if (parent->ing->py->rt && !p->ing->py->rt &&
	    !pyproc_inherit(p->ing->py, parent->ing->py, (int)p->pid, mono_ns))
		in->c.py_processes++;
}

static void on_fork(struct ingest *in, const struct profd_proc_event *e)
{
	struct proc *parent = proctable_find_live(in->pt, e->ppid), *p;
	char comm[PROFD_COMM_LEN + 1];
	bool older;

	/* A live entry of another program with the parent's pid (its exit
	 * lost, the pid reused) is no parent to inherit from. */
	if (parent && parent->start_time && e->parent_start_ns &&
	    parent->start_time != start_ticks(e->parent_start_ns))
		parent = NULL;

	in->c.proc_forks++;
	copy_comm(comm, e->comm);
	p = live_proc(in, e->pid, e->start_ns, e->time_ns, &older);
	if (older)
		return; /* ended already */
	if (!p && (p = proctable_add(in->pt, e->pid, start_ticks(e->start_ns), comm)))
		request_identity(in, p); /* checked, though the parent's is taken now */
	if (!p)
		return;
	p->ppid = e->ppid;
	if (parent)
		inherit(in, p, parent, e->time_ns);
	if (!p->maps_loaded)
		ingest_request_maps(in, p, 0, e->time_ns);
}

static void on_proc_event(struct ingest *in, const struct profd_proc_event *e)
{
	char comm[PROFD_COMM_LEN + 1];
	struct proc *p;
	bool older;

	copy_comm(comm, e->comm);
	p = live_proc(in, e->pid, e->start_ns, e->time_ns, &older);
	if (older)
		return; /* an earlier process with this pid, ended already */
	if (e->type == PROFD_EV_EXIT) {
		in->c.proc_exits++;
		end_proc(in, e->pid, e->time_ns);
		return;
	}
	in->c.proc_execs++;
	forget(in, e->pid); /* the old program's memory is gone */
	if (p) {
		proctable_exec(in->pt, e->pid, comm);
		p->exec_ns = ingest_realtime(in, e->time_ns);
		aggregate_exec(in->agg, p); /* what it counted was the old program */
		request_identity(in, p);
		ingest_request_maps(in, p, 0, e->time_ns);
	} else {
		p = live_or_new(in, e->pid, e->start_ns, comm);
		if (p)
			p->exec_ns = ingest_realtime(in, e->time_ns);
	}
	/* A statically linked interpreter is mapped already: look now, so
	 * Python frames start with its first samples. */
	if (p) {
		if (e->ppid)
			p->ppid = e->ppid;
		ingest_detect_python(in, p, e->time_ns);
		/* The executable and the loader are mapped: tables now, the
		 * libraries on the first walk that meets them. */
		ingest_unwind_requested(p); /* libraries map next: refresh at once */
		proc_event(in, p->pid, INGEST_PROC_EXEC);
	}
}

void ingest_event(struct ingest *in, const void *data, size_t len)
{
	__u32 type;

	if (len < sizeof(type)) {
		in->c.bad_events++;
		return;
	}
	memcpy(&type, data, sizeof(type));
	if (type == PROFD_EV_STACK && len >= PROFD_STACK_HDR_BYTES) {
		on_stack(in, data, len);
	} else if (type == PROFD_EV_SAMPLE && len >= sizeof(struct profd_sample)) {
		struct profd_sample e;

		memcpy(&e, data, sizeof(e));
		on_sample(in, &e, false, false);
	} else if (type == PROFD_EV_OFFCPU) {
		if (ingest_offcpu_event(in, data, len, in->npending >= PENDING_MAX) == -EAGAIN)
			defer(in, data, len);
	} else if (type == PROFD_EV_MEMORY || type == PROFD_EV_MMAP) {
		if (ingest_memory_event(in, data, len, in->npending >= PENDING_MAX) == -EAGAIN)
			defer(in, data, len);
	} else if (type == PROFD_EV_GPU) {
		in->frames_wait = false;
		if (ingest_gpu_event(in, data, len, in->npending >= PENDING_MAX) == -EAGAIN)
			defer(in, data, len);
	} else if (type == PROFD_EV_CUDA_NAME) {
		ingest_cuda_name_event(in, data, len);
	} else if ((type == PROFD_EV_EXEC || type == PROFD_EV_EXIT || type == PROFD_EV_FORK) &&
		   len >= sizeof(struct profd_proc_event)) {
		struct profd_proc_event e;

		memcpy(&e, data, sizeof(e));
		if (type == PROFD_EV_FORK)
			on_fork(in, &e);
		else
			on_proc_event(in, &e);
	} else {
		in->c.bad_events++;
	}
}

void ingest_sweep_start(struct ingest *in)
{
	in->sweep_at = in->pt->n;
}

/* Each live process's identity is read again (on the worker, when the
 * daemon has one): an answer that finds it gone ends it, and a lost
 * answer to its first request is repaired. */
size_t ingest_sweep_step(struct ingest *in, uint64_t mono_ns, size_t budget)
{
	struct proctable *pt = in->pt;

	(void)mono_ns;
	/* Downwards: an exit moves the last entry into the freed slot. */
	if (in->sweep_at > pt->n)
		in->sweep_at = pt->n;
	for (; in->sweep_at > 0 && budget > 0; budget--) {
		struct proc *p = pt->all[--in->sweep_at];

		if (!p->exited && p->start_time)
			ask_identity(in, p); /* may end p */
	}
	return in->sweep_at;
}
