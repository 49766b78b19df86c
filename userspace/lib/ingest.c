#include "ingest.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "pycode.h"
#include "symbolize.h"

#define RAW_CACHE_MAX 32768
/* Merged frames: user + Python + kernel, plus room for root frames. */
#define MAX_FRAMES (3 * PROFD_MAX_STACK_DEPTH + 8)

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ingest_sync_clock(struct ingest *in)
{
	in->realtime_offset_ns = (int64_t)(now_ns(CLOCK_REALTIME) - now_ns(CLOCK_MONOTONIC));
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
	in->pyc = pycode_cache_new();
	if (!in->pyc)
		return -ENOMEM;
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
	hashmap_free(&in->eval_frames);
	pycode_cache_free(in->pyc);
	in->pyc = NULL;
}

static const struct raw_stack *raw_lookup(struct ingest *in, uint64_t id)
{
	uint64_t v;

	if (hashmap_get(&in->raw[0], id, &v) || hashmap_get(&in->raw[1], id, &v))
		return (const struct raw_stack *)(uintptr_t)v;
	return NULL;
}

static const struct raw_stack *raw_insert(struct ingest *in, uint64_t id, const struct profd_stack *st)
{
	struct raw_stack *r = malloc(sizeof(*r) + st->nr * sizeof(uint64_t));

	if (!r)
		return NULL;
	r->kind = st->kind;
	r->nr = st->nr;
	memcpy(r->ips, st->ips, st->nr * sizeof(uint64_t));
	if (in->raw[0].len >= in->raw_max) {
		free_raw(&in->raw[1]);
		in->raw[1] = in->raw[0];
		hashmap_init(&in->raw[0]);
	}
	if (hashmap_put(&in->raw[0], id, (uint64_t)(uintptr_t)r)) {
		free(r);
		return NULL;
	}
	return r;
}

/* The raw stack for id.  A NEW flag means this event's BPF insert created
 * the map entry: copy it (if not cached) and delete it so the map only
 * holds unread stacks.  Without the flag the entry may still be in the
 * map (inserted by an event not yet processed) or already in the cache. */
const struct raw_stack *ingest_resolve_stack(struct ingest *in, uint64_t id, bool is_new,
					     uint32_t kind)
{
	const struct raw_stack *r = raw_lookup(in, id);
	struct profd_stack st;

	if (!r && in->be.read_stack(in->be.ctx, id, &st) == 0) {
		in->c.stack_reads++;
		r = raw_insert(in, id, &st);
	}
	if (is_new)
		in->be.del_stack(in->be.ctx, id);
	if (r && r->kind != kind)
		return NULL; /* a 64-bit hash collision across kinds: refuse */
	return r;
}

#define UNWIND_REFRESH_MIN_NS (250ull * 1000000ull) /* per process */

static void proc_event(struct ingest *in, uint32_t pid, enum ingest_proc_event what)
{
	if (in->be.proc_event)
		in->be.proc_event(in->be.ctx, pid, what);
}

void ingest_unwind_requested(struct proc *p)
{
	p->unwind_added = true;
	p->unwind_refresh_mono_ns = 0;
}

/* Native unwind tables: requested for a process on first sight, refreshed
 * (rate-limited) when a walk ran into code it had no table for. */
void ingest_keep_unwind_tables(struct ingest *in, struct proc *p, const struct profd_sample *e)
{
	if (e->flags & PROFD_SAMPLE_USTACK_FP)
		in->c.ustack_fp++;
	if (p->exited || p->start_time == 0)
		return;
	if (!p->unwind_added) {
		ingest_unwind_requested(p);
		proc_event(in, p->pid, INGEST_PROC_NEW);
	} else if ((e->flags & PROFD_SAMPLE_USTACK_UNKNOWN) &&
		   e->time_ns - p->unwind_refresh_mono_ns >= UNWIND_REFRESH_MIN_NS) {
		p->unwind_refresh_mono_ns = e->time_ns;
		in->c.unwind_refreshes++;
		proc_event(in, p->pid, INGEST_PROC_REFRESH);
	}
}

static void copy_comm(char dst[PROFD_COMM_LEN + 1], const char src[PROFD_COMM_LEN])
{
	memcpy(dst, src, PROFD_COMM_LEN);
	dst[PROFD_COMM_LEN] = '\0';
}

static void on_sample(struct ingest *in, const struct profd_sample *e)
{
	const struct raw_stack *u = NULL, *k = NULL, *py = NULL;
	char comm[PROFD_COMM_LEN + 1];
	uint32_t ids[MAX_FRAMES], n;
	struct proc *p;
	int64_t idx;

	in->c.samples++;
	if (!in->c.first_sample_mono_ns)
		in->c.first_sample_mono_ns = e->time_ns;
	copy_comm(comm, e->comm);
	if (e->kstack_id)
		k = ingest_resolve_stack(in, e->kstack_id, e->flags & PROFD_SAMPLE_KSTACK_NEW,
				  PROFD_STACK_KERNEL);
	if (e->ustack_id)
		u = ingest_resolve_stack(in, e->ustack_id, e->flags & PROFD_SAMPLE_USTACK_NEW,
				  PROFD_STACK_USER);
	if (e->pystack_id)
		py = ingest_resolve_stack(in, e->pystack_id, e->flags & PROFD_SAMPLE_PYSTACK_NEW,
				   PROFD_STACK_PYTHON);
	if ((e->kstack_id && !k) || (e->ustack_id && !u) || (e->pystack_id && !py))
		in->c.stack_lost++;

	p = proctable_get(in->pt, e->pid, comm);
	if (!p) {
		in->c.dropped_noproc++;
		return;
	}
	if (!p->py_checked)
		ingest_detect_python(in, p, e->time_ns);
	ingest_keep_unwind_tables(in, p, e);
	if (py)
		in->c.py_samples++;
	if (ingest_build_frames(in, p, e, u, k, py, ids, MAX_FRAMES, &n))
		goto nomem;
	idx = aggregate_stack(in->agg, p, ids, n);
	if (idx < 0 || aggregate_count(in->agg, p, (uint32_t)idx, e->tid, comm,
				       ingest_realtime(in, e->time_ns), 1))
		goto nomem;
	in->c.aggregated++;
	return;
nomem:
	in->c.dropped_nomem++;
}

static void forget(struct ingest *in, uint32_t pid)
{
	symbolizer_forget_pid(in->sym, (int)pid);
	pycode_cache_forget_pid(in->pyc, (int)pid);
	if (in->be.py_del)
		in->be.py_del(in->be.ctx, pid);
}

static void on_proc_event(struct ingest *in, const struct profd_proc_event *e)
{
	char comm[PROFD_COMM_LEN + 1];
	struct proc *p;

	copy_comm(comm, e->comm);
	/* Either way the old program's memory is gone. */
	forget(in, e->pid);
	if (e->type == PROFD_EV_EXIT) {
		in->c.proc_exits++;
		proctable_exit(in->pt, e->pid, ingest_realtime(in, e->time_ns));
		proc_event(in, e->pid, INGEST_PROC_EXIT);
		return;
	}
	in->c.proc_execs++;
	proctable_exec(in->pt, e->pid, comm);
	/* A statically linked interpreter is mapped already: look now, so
	 * Python frames start with its first samples. */
	p = proctable_get(in->pt, e->pid, comm);
	if (p) {
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
	if (type == PROFD_EV_SAMPLE && len >= sizeof(struct profd_sample)) {
		struct profd_sample e;

		memcpy(&e, data, sizeof(e));
		on_sample(in, &e);
	} else if (type == PROFD_EV_GPU) {
		ingest_gpu_event(in, data, len);
	} else if ((type == PROFD_EV_EXEC || type == PROFD_EV_EXIT) &&
		   len >= sizeof(struct profd_proc_event)) {
		struct profd_proc_event e;

		memcpy(&e, data, sizeof(e));
		on_proc_event(in, &e);
	} else {
		in->c.bad_events++;
	}
}

int ingest_scan_python(struct ingest *in)
{
	DIR *d = opendir(in->pt->proc_root);
	struct dirent *de;
	int found = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);
		struct proc *p;

		if (*end || !pid)
			continue;
		p = proctable_get(in->pt, (uint32_t)pid, NULL);
		if (!p)
			break;
		ingest_detect_python(in, p, now_ns(CLOCK_MONOTONIC));
		found += p->py != NULL;
		/* Unwind tables come with each process's first sample: building
		 * them for every process here would delay the start. */
	}
	closedir(d);
	return found;
}
