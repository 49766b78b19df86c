/* ingest: the first userspace stage, and the daemon's fast path.  Takes
 * ringbuf events: stack records (a stack's frames, sent once by BPF) are
 * kept by ID; a sample is counted in constant time under its raw stack IDs
 * when its process has seen them before (the per-process memo), and
 * symbolized once (kernel, native and Python frames, merged in true order)
 * when it has not.  Slow per-process work (Python detection, unwind
 * tables) is handed to the backend's workers and published back later.
 * Every sample ends in exactly one counter: aggregated, or dropped with a
 * reason. */
#ifndef PROFD_INGEST_H
#define PROFD_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "fileframes.h"
#include "hashmap.h"
#include "profd_abi.h"
#include "proctable.h"

/* Frames a symbolized stack may have: kernel and user stacks, the Python
 * frames put in place of the eval loop's, and a few synthetic ones (GPU
 * leaf, wait, task, roots). */
#define INGEST_MAX_FRAMES (2 * PROFD_MAX_STACK_DEPTH + PROFD_MAX_PY_FRAMES + 8)

struct symbolizer;
struct gpu;
struct pycode_cache;
struct pyruntime;
struct pyproc;

/* Python names are checked against the process's memory again this often
 * (2^32 ns, about 4 s) per code object, and per memoized stack, at one
 * read per code object, not one per sample.  (Every second, those reads
 * were a sixth of profd's CPU at 99 Hz.)  A code object freed and another
 * at its address are told apart at once by the fingerprint each frame
 * carries (profd_abi.h); the re-check is what still notices a successor
 * whose fields differ but hash to the same fingerprint, and a renamed
 * asyncio task. */
#define INGEST_PY_RECHECK_SHIFT 32

/* A Python name asked of the worker: a code object's frame (addr, off),
 * named only while the code object there has fingerprint fp (0: any), or
 * an asyncio task's name (task set), for the process (pid, start_time) as
 * it was at py_names_gen, in the recheck epoch it was due in. */
struct ingest_py_ask {
	uint32_t pid;
	uint64_t start_time;
	uint64_t addr;
	int64_t off;
	uint32_t fp;
	uint32_t epoch, gen;
	/* Where to read a code object once pid is gone: a live ancestor
	 * with the same interpreter at the same addresses (0: none); see
	 * pycode_name_in_donor. */
	uint32_t donor;
	bool task;
};

enum ingest_proc_event { INGEST_PROC_NEW, INGEST_PROC_EXEC, INGEST_PROC_REFRESH, INGEST_PROC_EXIT };

/* What ingest needs from the rest of the daemon: the daemon wires the
 * sampler and its workers in, unit tests a fake.  Every member may be NULL. */
struct ingest_backend {
	/* Userspace dropped the stacks of generations before gen. */
	void (*stack_gen)(void *ctx, uint32_t gen);
	/* Start or stop walking Python frames of a process. */
	int (*py_add)(void *ctx, uint32_t pid, const struct profd_py_proc *pp, const char *path);
	void (*py_del)(void *ctx, uint32_t pid);
	/* Look for CPython in a process off the sample path; the answer comes
	 * back through ingest_python_found().  NULL: look inline (tests). */
	void (*py_detect)(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req);
	/* Read a process's uid and exe off the sample path; the answer comes
	 * back through ingest_identity_found().  NULL: read inline (tests). */
	void (*identify)(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req);
	/* Read a process's workload (identity.h) off the sample path: argv
	 * and cgroup, or the cgroup alone; the answer comes back through
	 * ingest_workload_found().  NULL: read inline (tests). */
	void (*workload)(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req,
			 bool cgroup_only);
	/* Read a process's maps off the sample path; the answer comes back
	 * through ingest_maps_found().  NULL: read inline (tests). */
	void (*maps)(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req);
	/* Read a process's resident set off the sample path; the answer
	 * comes back through ingest_rss_found().  NULL: read inline (tests). */
	void (*rss)(void *ctx, uint32_t pid, uint64_t start_time, uint32_t req);
	/* Read a Python name off the sample path (rt: the process's runtime,
	 * copied if kept); the answer comes back through ingest_py_named().
	 * NULL: read inline (tests). */
	void (*py_name)(void *ctx, const struct ingest_py_ask *a, const struct pyruntime *rt);
	/* A process appeared, exec'ed, needs its native unwind tables
	 * refreshed (new mappings), or exited. */
	void (*proc_event)(void *ctx, uint32_t pid, enum ingest_proc_event what);
	void *ctx;
};

struct ingest_counters {
	uint64_t samples;        /* sample events received */
	uint64_t aggregated;     /* counted in a profile */
	uint64_t dropped_nomem;  /* lost to allocation failure */
	uint64_t dropped_noproc; /* process table full */
	uint64_t stack_lost;     /* stack ID unknown: counted under "[stack lost]" */
	uint64_t stack_records;  /* stack records received (frames sent by BPF) */
	uint64_t stack_gens;     /* generations of kept stacks dropped */
	uint64_t deferred;       /* samples whose stack record came later in the batch */
	uint64_t memo_hits;      /* samples counted without symbolizing */
	uint64_t symbolized;     /* samples symbolized (new stack for the process) */
	uint64_t proc_execs, proc_exits;
	uint64_t proc_forks;     /* new processes seen at their fork */
	uint64_t forks_inherited; /* ... that took their parent's maps (and Python) */
	uint64_t proc_exits_repaired; /* exits found from a reused pid's samples */
	uint64_t identities;     /* processes' uid and exe read off the sample path */
	uint64_t workloads;      /* processes' workloads read (first, exec, cgroup rechecks) */
	uint64_t requests;       /* slow-path work asked of the backend (any kind) */
	uint64_t bad_events;     /* malformed ringbuf records */
	uint64_t maps_reloads;
	uint64_t user_frames, user_frames_unknown; /* symbolized user frames / of them without a symbol */
	uint64_t user_frames_by_file; /* named from the file-wide cache (fileframes.h): not in the two above */
	uint64_t anon_frames_named; /* JIT code's frames named by a perf map read after they were sampled */
	uint64_t py_processes;   /* Python processes found */
	uint64_t py_samples;     /* samples carrying Python frames */
	uint64_t py_frames_unreadable; /* code objects that could not be read */
	uint64_t py_frames_named_after_exit; /* by the name last checked, the process gone */
	uint64_t py_names_asked; /* Python names read on the worker (code objects, tasks) */
	uint64_t ustack_fp;      /* user stacks by frame pointers (no tables yet) */
	uint64_t unwind_refreshes; /* tables refreshed after a walk hit unknown code */
	uint64_t first_sample_mono_ns;
	uint64_t offcpu_events;     /* off-CPU events received */
	uint64_t offcpu_aggregated; /* ... counted in a profile */
	uint64_t offcpu_gil_waits;  /* ... of a thread waiting for the GIL */
	uint64_t memory_events;     /* memory events taken (memory.bpf.h) */
	uint64_t memory_bytes;      /* ... bytes they counted in profiles */
	uint64_t mmap_events;       /* mmap events taken (mmap.bpf.h) */
	uint64_t mmap_bytes_mapped; /* ... bytes they counted as mapped (> 0) */
	uint64_t mmap_bytes_unmapped; /* ... and as unmapped (< 0) */
};

/* Ingest's state per process (proc.ing), made, reset and freed through
 * its proctable owner hooks (ingest_proc.c). */
struct gpu_ktab;

#define INGEST_KTAB_EXITS 64

/* Frame ids of anonymous code made for one address each (ingest_jit.c). */
struct ingest_anon_ids {
	uint32_t *ids;
	size_t n, cap;
};

/* The ids of processes gone, made again for others, and how many are in
 * use (held by a process). */
struct ingest_anon_pool {
	struct ingest_anon_ids free;
	size_t live;
};

struct proc_ingest {
	struct hashmap user_frames;  /* user ip -> global frame id + 1 */
	/* The fast path: hash of a sample's raw stack IDs -> its stack index
	 * in the profile + 1, and (Python stacks) when it was last checked. */
	struct hashmap stack_memo;
	/* Stack index -> its comm stack's index + 1, for stacks through a
	 * collective (ingest_comm.c); empty in most processes. */
	struct hashmap comm_of;
	bool unwind_added;     /* native unwind tables requested */
	uint64_t unwind_refresh_mono_ns;

	/* JIT code no perf map names yet (ingest_jit.c): address -> its own
	 * frame id + 1, renamed when the map (read again at anon_gen) names
	 * it; those named, or of a program before an exec, stay its own. */
	struct hashmap anon_frames;
	struct ingest_anon_ids anon_kept;
	uint64_t anon_gen;
	struct ingest_anon_pool *anon_pool; /* where they go back when it does */

	struct pyproc *py; /* its Python (lib/python owns what is inside) */
	struct gpu_ktab *kernels; /* CUDA kernel handles it made (lib/gpu), NULL until one */
	bool kernels_dropping;    /* exited: kernels is dropped at a batch end */
};

/* A deferred event: a sample or a GPU call, as the ring gave it. */
struct ingest_pending {
	union {
		struct profd_sample sample;
		struct profd_gpu_event gpu;
		struct profd_offcpu_event offcpu;
		struct profd_memory_event memory;
	} ev;
	uint32_t tries; /* batch ends seen so far */
	uint64_t since_ns; /* when it was deferred (CLOCK_MONOTONIC) */
	bool waits_file; /* for a file's symbols being read */
};

struct ingest {
	struct ingest_backend be;
	struct symbolizer *sym;
	struct pycode_cache *pyc;
	struct proctable *pt;
	struct aggregate *agg;
	struct ingest_counters c;
	/* Raw stacks by ID: two generations, the older dropped when the
	 * newer fills (BPF is told, and sends those stacks again when it
	 * sees them), so memory stays bounded without per-entry LRU. */
	struct hashmap raw[2];
	size_t raw_max;
	uint32_t raw_gen;
	/* Events naming a stack whose record is not here yet (sent on
	 * another CPU, or read in the next pass of the rings): retried at the
	 * end of this batch and of the next, then counted as they are. */
	struct ingest_pending *pending;
	size_t npending;
	size_t sweep_at; /* a sweep's next entry + 1 (0: none under way) */
	size_t rss_at;	 /* the RSS pass's next entry + 1 (0: start over) */
	struct hashmap kernel_frames; /* kernel ip -> global frame id + 1 */
	struct fileframes file_frames; /* (file, offset) -> user frame id + 1, eval bit */
	int64_t realtime_offset_ns;   /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	struct gpu *gpu;              /* GPU device names and counters; may be NULL */
	/* Exited processes whose CUDA kernel handles are still kept: their
	 * launches still in the GPU ring (or deferred) name kernels with
	 * them; dropped two batch ends after the exit, once none waits
	 * (ingest_kernels.c). */
	struct ingest_ktab_exit {
		uint32_t pid, batches;
		uint64_t start_time;
	} ktab_exits[INGEST_KTAB_EXITS];
	size_t nktab_exits;
	struct ingest_anon_pool anon; /* frames of JIT code waiting for a name */
	bool frames_wait; /* the last stack built has a frame whose file or name is being read */
	bool py_read_here; /* Python names read on this thread (a client's request) */
	/* A CPU sample's time in the comm profile, where collectives are
	 * read from samples (ingest_comm.c); 0: traced, or not wanted. */
	uint64_t comm_sample_ns;
};

/* A raw stack as copied from the BPF map. */
struct raw_stack {
	uint32_t kind;
	uint32_t nr;
	uint64_t ips[];
};

/* ingest.c: the stage's life and its entry point for every ring event. */
int ingest_init(struct ingest *in, const struct ingest_backend *be, struct symbolizer *sym,
		struct proctable *pt, struct aggregate *agg);
void ingest_free(struct ingest *in);
void ingest_event(struct ingest *in, const void *data, size_t len);
/* End of a consume pass: events waiting for a stack record are retried;
 * after their second batch end they are counted, under "[stack lost]"
 * where it never came. */
void ingest_end_batch(struct ingest *in);
/* CPU samples received and waiting in the pending list: neither counted
 * nor dropped yet (stats' received = aggregated + dropped + these). */
size_t ingest_samples_pending(const struct ingest *in);
/* Re-read the clock offset (NTP steps); call now and then. */
void ingest_sync_clock(struct ingest *in);
uint64_t ingest_realtime(const struct ingest *in, uint64_t mono_ns);
/* The raw stack of an ID (NULL: unknown). */
const struct raw_stack *ingest_resolve_stack(struct ingest *in, uint64_t id, uint32_t kind);
/* Tables for p have been asked for (first sight, exec, or the daemon
 * before sampling): later walks into unknown code refresh them, the first
 * such refresh at once. */
void ingest_unwind_requested(struct proc *p);
/* A sweep ends every live process /proc no longer has (or has as another
 * program, by start time): exit events lost or never seen.  It reads /proc
 * once per process, so it runs from a timer in steps of `budget`
 * processes; a step returns how many are left (0: the sweep is done). */
void ingest_sweep_start(struct ingest *in);
size_t ingest_sweep_step(struct ingest *in, uint64_t mono_ns, size_t budget);

/* The worker's answers (off the sample path), each for request req of
 * the process (pid, start_time); one for a process that has exec'ed,
 * been asked again or gone since is dropped.
 * ingest.c: identify(): err 0 with what /proc says (read_start its start
 * time then, exe owned by ingest from here), or -errno.  A process /proc
 * no longer has, or has as another program, is ended: its exit was lost. */
struct ingest_identity {
	int err;
	uint64_t read_start;
	uint32_t uid;
	uint32_t ppid;
	char *exe;
};
void ingest_identity_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req,
			   struct ingest_identity *id);
/* ingest_workload.c: err 0 with wid (owned by ingest from here; comm,
 * exe and service are filled here), or -errno.  cgroup_only: the script
 * is the one read before. */
struct workload_id;
void ingest_workload_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req,
			   int err, bool cgroup_only, struct workload_id *wid);
/* ingest_maps.c: err 0 with maps (moved from *m), or -errno. */
void ingest_maps_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req, int err,
		       struct procmaps *m);
/* ingest_python.c: rt (owned by ingest from here), NULL when the process
 * runs no CPython. */
void ingest_python_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req,
			 struct pyruntime *rt);
/* ingest_pynames.c: py_name(): err 0 and the name (text; for a task its
 * name and whether it was given one), or -errno. */
void ingest_py_named(struct ingest *in, const struct ingest_py_ask *a, int err, const char *text,
		     bool is_named);
/* ingest_rss.c: RSS over time.  A step of the pass that asks, for each
 * live process active since its last point and at least every_ns after
 * it, its resident set; budget entries looked at per step.  Answers come
 * back through ingest_rss_found() and become the process's points.  The
 * same walk rechecks workloads (ingest_workload.c). */
void ingest_rss_step(struct ingest *in, uint64_t mono_ns, uint64_t every_ns, size_t budget);
void ingest_rss_found(struct ingest *in, uint32_t pid, uint64_t start_time, uint32_t req, int err,
		      uint64_t bytes);

/* ingest_python.c: find Python processes already running (so their
 * threads get Python frames from the first sample); how many were found. */
int ingest_scan_python(struct ingest *in);
/* Whether p's interpreter was found (its Python frames get names). */
bool ingest_is_python(const struct proc *p);

/* ingest_offcpu.c, for `profctl stacks` and blocks under way: a sample
 * naming these stacks (kept by a walk earlier, so without the NEW flags),
 * and the frames (global ids, root first) of a thread's stacks as s names
 * them: blocked, the stacks it had when it blocked (a "[GIL wait]" leaf
 * when it waits for the GIL); else a CPU sample's.  0 or -errno.
 * A stack record s names may not be in hand: a thread's latest
 * switch-out or sample, read from BPF's thread state, can be newer than
 * the last ring read.  With in_hand_only that is -EAGAIN, nothing named
 * or counted; without, the frames of the records there, counted lost. */
void ingest_sample_of(struct profd_sample *s, uint32_t pid, uint32_t tid, uint64_t when,
		      uint64_t kstack, uint64_t ustack, uint64_t pystack, uint32_t flags);
int ingest_thread_frames(struct ingest *in, struct proc *p, const struct profd_sample *s,
			 bool blocked, bool in_hand_only, uint32_t *ids, uint32_t max, uint32_t *n);

#endif
