/* ingest_offcpu.c: a thread was off CPU (blocked in a sleep, a lock, I/O)
 * for a known time.  The event names the stacks the thread had when it
 * blocked; they become a stack like a CPU sample's, counted in the
 * off-cpu profile weighted by the time (ns).  The wall profile is composed
 * from the cpu and off-cpu ones at dump time (control.c), so nothing is
 * counted twice here.
 *
 * A thread waiting for the GIL blocks inside the interpreter's take_gil():
 * such a stack gets a "[GIL wait]" leaf, so the wait shows next to the
 * Python line that asked for the GIL back, also in Python-only views.
 * That needs take_gil's symbol (pyenv and python.org builds, libpython,
 * a distribution's stripped interpreter with its debug file: Debian's
 * python3.11-dbg, or from debuginfod); without it, the futex wait only. */
#include <errno.h>
#include <string.h>

#include "ingest.h"
#include "ingest_int.h"

#define GIL_FN "take_gil"

void ingest_sample_of(struct profd_sample *s, uint32_t pid, uint32_t tid, uint64_t when,
		      uint64_t kstack, uint64_t ustack, uint64_t pystack, uint32_t flags)
{
	memset(s, 0, sizeof(*s));
	s->type = PROFD_EV_SAMPLE;
	s->pid = pid;
	s->tid = tid;
	s->time_ns = when;
	s->kstack_id = kstack;
	s->ustack_id = ustack;
	s->pystack_id = pystack;
	/* The records were sent before, with the walk: none follows now. */
	s->flags = flags & ~(PROFD_SAMPLE_KSTACK_NEW | PROFD_SAMPLE_USTACK_NEW |
			     PROFD_SAMPLE_PYSTACK_NEW | PROFD_OFFCPU_UNCAPTURED);
}

static void as_sample(const struct profd_offcpu_event *e, struct profd_sample *s)
{
	ingest_sample_of(s, e->pid, e->tid, e->time_ns, e->kstack_id, e->ustack_id, e->pystack_id,
			 e->flags);
	s->start_ns = e->start_ns;
	memcpy(s->comm, e->comm, sizeof(s->comm));
}

/* fn itself or a compiler's clone of it: GCC's LTO and partial inlining
 * name them fn.lto_priv.0, fn.cold, fn.isra.0 (Debian's python3.11 has
 * take_gil.lto_priv.0 in its debug file, no take_gil). */
static bool is_function(const char *name, const char *fn)
{
	size_t n = strlen(fn);

	return !strncmp(name, fn, n) && (name[n] == '\0' || name[n] == '.');
}

/* Whether the interpreter's take_gil() is among the native frames. */
static bool waits_for_gil(const struct ingest *in, const uint32_t *ids, uint32_t n)
{
	const struct stackset *dict = in->agg->dict;
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct ss_frame *f = &dict->frames[ids[i]];

		if (f->kind == FRAME_NATIVE && is_function(f->name, GIL_FN))
			return true;
	}
	return false;
}

static int add_leaf(struct ingest *in, const char *name, uint32_t *ids, uint32_t *n)
{
	int64_t id = aggregate_frame(in->agg, FRAME_WAIT, name);

	if (id < 0)
		return (int)id;
	ids[(*n)++] = (uint32_t)id;
	return 0;
}

/* A frame of the walk itself, on top of a switch-out's kernel stack (the
 * walk runs inside sched_switch): the tracepoint's dispatch, and before
 * 5.16 or so the program's own JIT image, which kallsyms does not list
 * there ("[unknown]"). */
static bool tracing_frame(const struct ss_frame *f)
{
	return f->kind == FRAME_KERNEL &&
	       (!strncmp(f->name, "bpf_", 4) || !strncmp(f->name, "__bpf_", 6) ||
		!strcmp(f->name, "[unknown]_[k]"));
}

/* The top of a blocked thread's frames (the native, kernel and Python
 * frames of its stacks in true order, *n of them in ids): without the
 * walk's own frames on top of the kernel stack, and on top "[runnable:
 * waiting for a CPU]" when it was preempted, or "[GIL wait]" when the
 * interpreter was taking the GIL.  Room for one more id in ids. */
static int blocked_top(struct ingest *in, bool preempted, uint32_t *ids, uint32_t *n)
{
	const struct stackset *dict = in->agg->dict;

	while (*n && tracing_frame(&dict->frames[ids[*n - 1]]))
		(*n)--;
	if (preempted)
		return add_leaf(in, "[runnable: waiting for a CPU]", ids, n);
	if (!waits_for_gil(in, ids, *n))
		return 0;
	in->c.offcpu_gil_waits++;
	return add_leaf(in, "[GIL wait]", ids, n);
}

/* An off-CPU event's frames: its stacks looked up, then the top above. */
static int blocked_frames(struct ingest *in, struct proc *p, const struct profd_sample *s,
			  bool preempted, bool final, uint32_t *ids, uint32_t max, uint32_t *n)
{
	int err = ingest_event_frames(in, p, s, final, ids, max, n);

	return err ? err : blocked_top(in, preempted, ids, n);
}

int ingest_thread_frames(struct ingest *in, struct proc *p, const struct profd_sample *s,
			 bool blocked, bool in_hand_only, uint32_t *ids, uint32_t max, uint32_t *n)
{
	const struct raw_stack *u, *k, *py;
	bool lost = !ingest_sample_stacks(in, s, &k, &u, &py), stable = true;
	int err;

	*n = 0;
	if (lost && in_hand_only)
		return -EAGAIN; /* nothing named, nothing counted */
	if (max < 2)
		return -EINVAL;
	/* A client waits for these frames: Python names are read here. */
	in->py_read_here = true;
	if (blocked) {
		err = ingest_event_frames_from(in, p, s, u, k, py, lost, true, ids, max - 1, n);
		if (!err)
			err = blocked_top(in, false, ids, n);
	} else {
		if (lost)
			in->c.stack_lost++;
		err = ingest_build_frames(in, p, s, u, k, py, ids, max, n, &stable);
	}
	in->py_read_here = false;
	return err;
}

int ingest_offcpu_event(struct ingest *in, const void *data, size_t len, bool final)
{
	char comm[PROFD_COMM_LEN + 1];
	uint32_t ids[INGEST_MAX_FRAMES + 1], n = 0;
	struct profd_offcpu_event e;
	struct profd_sample s;
	struct proc *p;
	int64_t idx;
	int err = 0;

	if (len < sizeof(e)) {
		in->c.bad_events++;
		return 0;
	}
	memcpy(&e, data, sizeof(e));
	as_sample(&e, &s);
	p = ingest_event_proc(in, &s, comm, e.comm);
	if (!p) {
		in->c.offcpu_events++;
		return 0;
	}
	if (e.flags & PROFD_OFFCPU_UNCAPTURED)
		err = add_leaf(in, "[off-cpu: stack not walked]", ids, &n);
	else
		err = blocked_frames(in, p, &s, !e.state, final, ids, INGEST_MAX_FRAMES, &n);
	if (err == -EAGAIN)
		return err; /* counted when it is taken again */
	in->c.offcpu_events++;
	if (err)
		in->c.dropped_nomem++;
	else if ((idx = ingest_count_weight(in, p, AGG_OFFCPU, ids, n, &s, comm,
					    e.duration_ns)) >= 0) {
		in->c.offcpu_aggregated++;
		/* a block in a collective: its time in the comm profile too */
		ingest_comm_note(in, p, (uint32_t)idx, ids, n);
		ingest_comm_count(in, p, (uint32_t)idx, s.tid, comm, ingest_realtime(in, s.time_ns),
				  e.duration_ns);
	}
	return 0;
}
