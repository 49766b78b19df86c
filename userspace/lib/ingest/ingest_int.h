/* ingest_int.h: what ingest's files share among themselves and nobody
 * else calls (ingest.h is the stage's interface). */
#ifndef PROFD_INGEST_INT_H
#define PROFD_INGEST_INT_H

#include "ingest.h"

/* ingest.c: the process a sample (or an event shaped like one) belongs
 * to: the live one, a late event's exited one, or a new entry; NULL when
 * the table is full or the event is of an earlier process with this pid. */
struct proc *ingest_sample_proc(struct ingest *in, const struct profd_sample *e,
				const char *comm);
/* The three raw stacks an event names (NULL where it names none); false
 * when one it names has not come (yet). */
bool ingest_sample_stacks(struct ingest *in, const struct profd_sample *e,
			  const struct raw_stack **k, const struct raw_stack **u,
			  const struct raw_stack **py);
/* The native unwind tables kept for the process an event names. */
void ingest_keep_unwind_tables(struct ingest *in, struct proc *p, const struct profd_sample *e);

/* ingest_proc.c: makes ingest the owner of proc.ing in pt (ingest_init
 * does): 0 or -errno. */
int ingest_own_procs(struct proctable *pt);

/* ingest_frames.c: the symbolized, root-first frames of one sample.
 * *stable is set false when a frame may be named differently later (an
 * address outside the known maps, an unreadable code object, Python
 * frames before the interpreter is known): such a stack is not memoized. */
int ingest_build_frames(struct ingest *in, struct proc *p, const struct profd_sample *e,
			const struct raw_stack *u, const struct raw_stack *k,
			const struct raw_stack *py, uint32_t *ids, uint32_t max, uint32_t *n,
			bool *stable);

/* ingest_jit.c: the frame of anonymous code at addr (kind, name and mod
 * as symbolized) that p's perf map does not name yet: one of its own per
 * address, renamed when the map names it; `shared` when too many wait. */
struct buf;
struct sym_module;
int64_t ingest_anon_frame(struct ingest *in, struct proc *p, uint64_t addr, uint32_t kind,
			  const char *name, const struct sym_module *mod, int64_t shared);
/* After a user frame of p was symbolized: if p's perf map was read again
 * since its waiting frames were looked up, look them up (name: scratch). */
void ingest_anon_rename(struct ingest *in, struct proc *p, struct buf *name);
/* p execs: its waiting frames wait no more.  p goes: its frames back to
 * the pool.  Ingest ends: processes freed later give nothing back. */
void ingest_anon_retire(struct proc_ingest *pi);
void ingest_anon_release(struct proc_ingest *pi);
void ingest_anon_pool_free(struct ingest *in);

/* ingest_workload.c: have p's workload read whole (new, fork, exec), and
 * on the RSS pass read its cgroup again when due (WID_RECHECK_NS). */
void ingest_ask_workload(struct ingest *in, struct proc *p, uint64_t mono_ns);
void ingest_recheck_workload(struct ingest *in, struct proc *p, uint64_t mono_ns);
/* The parent's workload for a forked child until its own is read. */
void ingest_inherit_workload(struct proc *p, const struct proc *parent);

/* ingest_maps.c: have p's maps read (off the sample path when the
 * backend can), for the address ip (0: none in particular). */
void ingest_request_maps(struct ingest *in, struct proc *p, uint64_t ip, uint64_t mono_ns);
/* Whether a sample of p waits for maps being read. */
bool ingest_waits_for_maps(const struct proc *p, const struct profd_sample *e);
/* Is ip inside p's mappings?  If not, have them read again (rate-limited
 * with backoff).  Whether ip is mapped now. */
bool ingest_refresh_maps_for(struct ingest *in, struct proc *p, uint64_t ip, uint64_t mono);

/* ingest_python.c: have p checked for CPython (through the backend's
 * worker when there is one; on this thread when here is set: start-up,
 * before sampling); the answer comes to ingest_python_found. */
void ingest_detect_python(struct ingest *in, struct proc *p, uint64_t mono_ns);
void ingest_detect_python_now(struct ingest *in, struct proc *p, uint64_t mono_ns, bool here);
/* An interpreter found without what its maps now hold (_asyncio, the C
 * library): look again on the worker. */
void ingest_recheck_python(struct ingest *in, struct proc *p);

/* Frame i of a raw Python stack (leaf first), as the walker packs it
 * (profd_abi.h): the code object, its fingerprint, the instruction offset
 * and PROFD_PYFRAME_* flags. */
struct py_raw_frame {
	uint64_t code;
	int64_t off;
	uint32_t fp, flags;
};

static inline struct py_raw_frame py_raw_frame(const struct raw_stack *py, uint32_t i)
{
	uint64_t word = py->ips[2 * i + 1];

	return (struct py_raw_frame){
	    .code = py->ips[2 * i],
	    .off = (int32_t)(uint32_t)word,
	    .fp = (uint32_t)(word >> PROFD_PYFRAME_FP_SHIFT),
	    .flags = (uint32_t)(word >> PROFD_PYFRAME_FLAGS_SHIFT) & PROFD_PYFRAME_FLAGS_MASK,
	};
}

/* ingest_pynames.c: a Python stack record just received from tgid's walk: the names of
 * its code objects not yet known are asked of the worker now, while the
 * process is alive to read. */
void ingest_python_prefetch(struct ingest *in, uint32_t tgid, const struct raw_stack *py);
/* A Python frame's id and an asyncio task frame's id,
 * as of mono; -EAGAIN when unreadable.  *stable is cleared when the name
 * may change once a read asked of the worker comes back (in->frames_wait
 * set when the sample should wait). */
int64_t ingest_python_frame(struct ingest *in, struct proc *p, const struct py_raw_frame *f,
			    uint64_t mono, bool *stable);
int64_t ingest_task_frame(struct ingest *in, struct proc *p, uint64_t addr, uint64_t mono,
			  bool *stable);
/* Whether every frame of Python stack pystack_id still has the name it
 * had (each code object re-checked once an epoch, as python frames are):
 * a memoized stack due for its check is then still right; *checked is
 * cleared while a check asked of the worker is awaited (due again). */
bool ingest_python_names_same(struct ingest *in, struct proc *p, uint64_t pystack_id,
			      uint64_t mono, bool *checked);

/* ingest_events.c, for events other than CPU samples (off-CPU, memory,
 * GPU) that name a sample's three stacks (s, from ingest_sample_of).
 * Their process (comm: PROFD_COMM_LEN + 1 bytes, filled from raw_comm),
 * its Python detection asked; NULL counted as dropped. */
struct proc *ingest_event_proc(struct ingest *in, const struct profd_sample *s, char *comm,
			       const char raw_comm[PROFD_COMM_LEN]);
/* Their frames, or -EAGAIN while maps or a file's symbols are being read
 * and the event is not final (it waits to the batch end like a sample). */
int ingest_event_frames(struct ingest *in, struct proc *p, const struct profd_sample *s,
			bool final, uint32_t *ids, uint32_t max, uint32_t *n);
/* The same from the stacks ingest_sample_stacks() found for s (lost: it
 * returned false), for a caller that looked them up already. */
int ingest_event_frames_from(struct ingest *in, struct proc *p, const struct profd_sample *s,
			     const struct raw_stack *u, const struct raw_stack *k,
			     const struct raw_stack *py, bool lost, bool final, uint32_t *ids,
			     uint32_t max, uint32_t *n);
/* Count weight of a profile type under the stack ids: the stack's index
 * in p's profile, or -ENOMEM (counted). */
int64_t ingest_count_weight(struct ingest *in, struct proc *p, int type, const uint32_t *ids,
			    uint32_t n, const struct profd_sample *s, const char *comm,
			    uint64_t weight);

/* The other events, each -EAGAIN when a stack it names has not come yet
 * and final is not set (the caller keeps it to the batch end).
 * ingest_gpu.c: a GPU driver call or CUDA entry-point event. */
int ingest_gpu_event(struct ingest *in, const void *data, size_t len, bool final);
/* A CUDA kernel handle made or dropped (profd_cuda_name_event): into
 * the process's handle table at once (it names later launches). */
void ingest_cuda_name_event(struct ingest *in, const void *data, size_t len);
/* ingest_kernels.c: the "kernel NAME" frame id of launch e (u: the
 * caller's raw stack), -ENOENT for a call that launches no kernel of
 * its own, -EAGAIN while a name it needs loads (and final is not set). */
/* p exits: its kernel handles are dropped after the launches still on
 * their way (ingest_kernels_end_batch, at each batch end). */
void ingest_kernels_exit(struct ingest *in, struct proc *p);
void ingest_kernels_end_batch(struct ingest *in);
int64_t ingest_launch_kernel(struct ingest *in, struct proc *p, const struct profd_gpu_event *e,
			     const struct raw_stack *u, bool final);
/* ingest_offcpu.c: a thread was off CPU (offcpu.bpf.h). */
int ingest_offcpu_event(struct ingest *in, const void *data, size_t len, bool final);

/* ingest_comm.c: time in collectives from samples (in->comm_sample_ns
 * set: collectives not traced).  Note stack idx (ids, root first) when
 * first symbolized; count weight ns under its comm stack, if it has one
 * (a CPU sample: in->comm_sample_ns; an off-CPU block: its length). */
void ingest_comm_note(struct ingest *in, struct proc *p, uint32_t idx, const uint32_t *ids,
		      uint32_t n);
void ingest_comm_count(struct ingest *in, struct proc *p, uint32_t idx, uint32_t tid,
		       const char *comm, uint64_t realtime_ns, uint64_t ns);
/* ingest_memory.c: bytes made resident by a stack (memory.bpf.h), or
 * mapped and unmapped (mmap.bpf.h, the same event's layout). */
int ingest_memory_event(struct ingest *in, const void *data, size_t len, bool final);

#endif
